import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layering docs/architecture.md draws, checked on the source: every import between folders of
 * src/ points down the order the document writes (in its fenced `layers` block), and no chain of
 * imports between files comes back to where it started. Type-only imports count: a layer that
 * names another's types depends on it as much as one that calls it.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = join(ROOT, 'src');

export interface Edge {
  /** Importing file, relative to src/ (`db/change-log.ts`). */
  from: string;
  /** Imported file, relative to src/. */
  to: string;
  /** The module specifier as written. */
  specifier: string;
}

/** The folder order of docs/architecture.md: the first line of its ```layers block. */
export function documentedLayers(markdown: string): string[] {
  const block = /```layers\n([^\n]+)\n/.exec(markdown);
  if (block === null) throw new Error('docs/architecture.md has no ```layers block');
  return block[1]!.split('→').map((name) => name.trim());
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every relative import (static, type-only, re-export or dynamic) of every .ts file under src/. */
export function importEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName: specifier } of importedFiles) {
      if (!specifier.startsWith('.')) continue;
      const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts');
      edges.push({ from: relative(SRC, file).split('\\').join('/'), to: relative(SRC, target).split('\\').join('/'), specifier });
    }
  }
  return edges;
}

const folderOf = (file: string) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '.');

/** Imports that point up the order (or into a folder the order does not name). */
export function upwardEdges(edges: readonly Edge[], layers: readonly string[]): string[] {
  const rank = new Map(layers.map((name, i) => [name, i]));
  const problems: string[] = [];
  for (const edge of edges) {
    const from = rank.get(folderOf(edge.from));
    const to = rank.get(folderOf(edge.to));
    if (from === undefined) problems.push(`src/${edge.from}: its folder is not in the layers of docs/architecture.md`);
    else if (to === undefined) problems.push(`src/${edge.from} imports '${edge.specifier}': src/${folderOf(edge.to)}/ is not in the layers`);
    else if (to > from) problems.push(`src/${edge.from} imports '${edge.specifier}' (${folderOf(edge.to)} is above ${folderOf(edge.from)})`);
  }
  return [...new Set(problems)];
}

/** Import cycles between files, each as the chain of files that closes it. */
export function importCycles(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to]);
  const cycles: string[][] = [];
  const done = new Set<string>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const visit = (file: string) => {
    stack.push(file);
    onStack.add(file);
    for (const to of next.get(file) ?? []) {
      if (onStack.has(to)) cycles.push([...stack.slice(stack.indexOf(to)), to]);
      else if (!done.has(to)) visit(to);
    }
    stack.pop();
    onStack.delete(file);
    done.add(file);
  };
  for (const file of [...next.keys()].sort()) if (!done.has(file)) visit(file);
  return cycles;
}

describe('the layers of src/', () => {
  const layers = documentedLayers(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));
  const edges = importEdges();

  it('names every folder of src/ once in docs/architecture.md', () => {
    const folders = readdirSync(SRC, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect([...layers].sort()).toEqual([...folders].sort());
  });

  it('reads the imports it checks', () => {
    // A parser that found nothing would pass every check below.
    expect(edges.length).toBeGreaterThan(100);
    expect(edges).toContainEqual(expect.objectContaining({ from: 'cli/main.ts', to: 'cli/errors.ts' }));
  });

  it('has no import that points up the layers', () => {
    expect(upwardEdges(edges, layers)).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(importCycles(edges).map((cycle) => cycle.map((f) => `src/${f}`).join(' → '))).toEqual([]);
  });

  it('has no two files of one name', () => {
    const byName = new Map<string, string[]>();
    for (const file of sourceFiles(SRC)) {
      const name = posix.basename(file);
      byName.set(name, [...(byName.get(name) ?? []), relative(SRC, file)]);
    }
    expect([...byName.values()].filter((files) => files.length > 1)).toEqual([]);
  });
});

describe('the layer checks themselves', () => {
  it('find an upward edge and a cycle in a made-up graph', () => {
    const edges: Edge[] = [
      { from: 'db/a.ts', to: 'render/b.ts', specifier: '../render/b.js' },
      { from: 'render/b.ts', to: 'db/a.ts', specifier: '../db/a.js' },
    ];
    expect(upwardEdges(edges, ['render', 'db'])).toEqual([`src/render/b.ts imports '../db/a.js' (db is above render)`]);
    expect(importCycles(edges)).toEqual([['db/a.ts', 'render/b.ts', 'db/a.ts']]);
  });
});

/**
 * The size limits of the code, and where settings are read. A function over 100 lines or a file
 * over 500 does more than one thing; the host configurations' text builders (src/hosting) are
 * exempt, being one long template each. Settings (environment, configuration) are read by the
 * command line and passed in: nothing below it reads `process.env`.
 */
const FUNCTION_LINES = 100;
const FILE_LINES = 500;
const NO_ENVIRONMENT = ['pipeline', 'render', 'formats', 'db'];

/**
 * Offenders still to be split, each to leave this list when its split lands: the list must
 * shrink to empty, and names nothing that no longer offends (checked below).
 */
const KNOWN_OFFENDERS = new Set<string>([
  // Not yet split, and no work under way on it: the benchmark's writer probe.
  'function src/bench/writer.ts:main',
]);

function lineOf(source: ts.SourceFile, position: number): number {
  return source.getLineAndCharacterOfPosition(position).line;
}

/** Every function of a file longer than FUNCTION_LINES, as `function src/<file>:<name>`. */
function longFunctions(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const lines = lineOf(source, node.getEnd()) - lineOf(source, node.getStart(source)) + 1;
      if (lines > FUNCTION_LINES) {
        const named = (node as ts.FunctionLikeDeclaration).name;
        const name = ts.isConstructorDeclaration(node) ? 'constructor' : named !== undefined ? named.getText(source) : `line ${lineOf(source, node.getStart(source)) + 1}`;
        found.push(`function src/${file}:${name}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** What breaks the limits in src/, each as `file src/…`, `function src/…:name` or `environment src/…`. */
export function limitProblems(): string[] {
  const problems: string[] = [];
  for (const path of sourceFiles(SRC)) {
    const file = relative(SRC, path).split('\\').join('/');
    const text = readFileSync(path, 'utf8');
    if (text.split('\n').length - (text.endsWith('\n') ? 1 : 0) > FILE_LINES) problems.push(`file src/${file}`);
    if (folderOf(file) !== 'hosting') problems.push(...longFunctions(file, text));
    if (NO_ENVIRONMENT.includes(folderOf(file)) && /\bprocess\.env\b/.test(text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, ''))) problems.push(`environment src/${file}`);
  }
  return problems;
}

describe('the limits of src/', () => {
  const problems = limitProblems();

  it(`has no function over ${FUNCTION_LINES} lines, no file over ${FILE_LINES}, no process.env below the command line`, () => {
    expect(problems.filter((problem) => !KNOWN_OFFENDERS.has(problem))).toEqual([]);
  });

  it('lists as known only offenders that still offend', () => {
    expect([...KNOWN_OFFENDERS].filter((known) => !problems.includes(known))).toEqual([]);
  });

  it('finds a long function, a long file and an environment read in made-up code', () => {
    const body = Array.from({ length: FUNCTION_LINES + 1 }, (_, i) => `  const a${i} = ${i};`).join('\n');
    expect(longFunctions('db/x.ts', `export function long(): void {\n${body}\n}\nexport const short = () => 1;\n`)).toEqual(['function src/db/x.ts:long']);
    expect(longFunctions('db/x.ts', `export class A {\n  constructor() {\n${body}\n  }\n}\n`)).toEqual(['function src/db/x.ts:constructor']);
  });
});
