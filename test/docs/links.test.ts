import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The documentation is a reference: every relative link in README.md and docs/*.md leads to a
 * file of the repository, every `#anchor` to a heading of the page it names, and every path of
 * the repository a page names in its text (`src/paths/url-scheme.ts`) exists. A moved file or a
 * renamed heading fails here, naming the page and the line.
 */

const REPO = resolve(import.meta.dirname, '../..');

/** The Markdown pages the project publishes. */
function pages(): string[] {
  const docs = readdirSync(join(REPO, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(REPO, 'docs', name));
  return [join(REPO, 'README.md'), ...docs, join(REPO, 'schemas', 'formats', 'README.md')];
}

/** A page's lines, with the lines of fenced code blocks blanked (they hold examples, not links). */
function proseLines(text: string): string[] {
  let fence: string | null = null;
  return text.split('\n').map((line) => {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (marker !== undefined && (fence === null || marker.startsWith(fence))) {
      fence = fence === null ? marker : null;
      return '';
    }
    return fence === null ? line : '';
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Inline code spans of a line removed, so that a link shown as code is not taken for one. */
function withoutCode(line: string): string {
  return line.replace(/`[^`]*`/g, '');
}

/** Every problem with the relative links of one page (`file:line: link: why`). */
function linkProblems(file: string, text: string, exists: (path: string) => boolean, read: (path: string) => string): string[] {
  const problems: string[] = [];
  proseLines(text).forEach((line, index) => {
    for (const match of withoutCode(line).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: ...
      const hash = target.indexOf('#');
      const path = hash === -1 ? target : target.slice(0, hash);
      const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
      const where = `${relative(REPO, file)}:${index + 1}: ${target}`;
      if (path === '') {
        if (anchor !== null && !anchorsOf(text).has(anchor)) problems.push(`${where}: no heading with that anchor`);
        continue;
      }
      const resolved = resolve(dirname(file), decodeURIComponent(path));
      if (relative(REPO, resolved).startsWith('..')) {
        problems.push(`${where}: leads outside the repository`);
        continue;
      }
      if (!exists(resolved)) {
        problems.push(`${where}: no such file`);
        continue;
      }
      if (anchor === null) continue;
      if (!resolved.endsWith('.md')) problems.push(`${where}: an anchor into a file that is not Markdown`);
      else if (!anchorsOf(read(resolved)).has(anchor)) problems.push(`${where}: no heading with that anchor`);
    }
  });
  return problems;
}

/** The kinds of file the repository holds: a path with another ending names some other project's file. */
const OWN_FILE = /\.(ts|js|md|json|hbs|xsd|rng|rnc|dtd|xml|html)$/;

/** Every file of the repository a page names in its prose that does not exist. */
function pathProblems(file: string, text: string, exists: (path: string) => boolean): string[] {
  const problems: string[] = [];
  proseLines(text).forEach((line, index) => {
    for (const match of line.matchAll(/(?<![\w./-])((?:src|test|docs|schemas|templates|bin)\/[\w./-]*\w)/g)) {
      const path = match[1]!;
      if (!OWN_FILE.test(path)) continue;
      const candidates = [resolve(REPO, path), resolve(dirname(file), path)];
      // Imports name the compiled file (`site-reader.js`); the repository holds its source.
      if (path.startsWith('src/') && path.endsWith('.js')) candidates.push(resolve(REPO, path.replace(/\.js$/, '.ts')));
      if (!candidates.some(exists)) problems.push(`${relative(REPO, file)}:${index + 1}: ${path}: no such file or folder`);
    }
  });
  return problems;
}

/** A page's headings as text, without Markdown's code marks, in lower case. */
function headingsOf(text: string): string[] {
  return proseLines(text)
    .map((line) => /^#{1,6}\s+(.*?)\s*$/.exec(line)?.[1])
    .filter((heading) => heading !== undefined)
    .map((heading) => heading.replace(/`/g, '').toLowerCase());
}

/**
 * Every section cited by page and heading (`docs/database.md, "Names"`) whose page has no heading
 * that holds the quoted words.
 */
function citationProblems(where: string, text: string, exists: (path: string) => boolean, read: (path: string) => string): string[] {
  const problems: string[] = [];
  text.split('\n').forEach((line, index) => {
    for (const match of line.matchAll(/docs\/([\w-]+\.md),? "([^"]+)"/g)) {
      const page = join(REPO, 'docs', match[1]!);
      const cited = match[2]!.toLowerCase();
      const at = `${where}:${index + 1}: docs/${match[1]} "${match[2]}"`;
      if (!exists(page)) problems.push(`${at}: no such page`);
      else if (!headingsOf(read(page)).some((heading) => heading.includes(cited))) problems.push(`${at}: no such heading`);
    }
  });
  return problems;
}

/** The TypeScript files under a folder. */
function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const onDisk = (path: string) => existsSync(path);
const fromDisk = (path: string) => readFileSync(path, 'utf8');

describe('the documentation', () => {
  it('links only to files and headings that exist', () => {
    const problems = pages().flatMap((file) => linkProblems(file, fromDisk(file), onDisk, fromDisk));
    expect(problems).toEqual([]);
  });

  it('names only files of the repository that exist', () => {
    // schemas/formats/README.md names the files of the projects the schemas come from.
    const own = pages().filter((file) => !file.startsWith(join(REPO, 'schemas')));
    const problems = own.flatMap((file) => pathProblems(file, fromDisk(file), onDisk));
    expect(problems).toEqual([]);
  });

  it('cites, in its pages and in the comments of src/, only sections that exist', () => {
    const citing = [...pages(), ...sourcesUnder(join(REPO, 'src'))];
    const problems = citing.flatMap((file) => citationProblems(relative(REPO, file), fromDisk(file), onDisk, fromDisk));
    expect(problems).toEqual([]);
  });

  it('lists every page of docs/ in the README', () => {
    const readme = fromDisk(join(REPO, 'README.md'));
    const unlisted = readdirSync(join(REPO, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .filter((name) => !readme.includes(`](docs/${name})`));
    expect(unlisted).toEqual([]);
  });
});

describe('the link checker', () => {
  it('names a cited section that no heading of its page holds', () => {
    const page = join(REPO, 'docs', 'database.md');
    const read = () => '# The site database\n\n## Change recording (schema version 2)\n\n### `change_log`\n';
    const text = 'see docs/database.md, "Change recording" and docs/database.md "change_log"\nand docs/database.md, "Names" or docs/gone.md "X"; docs/database.md "schema version 2"';
    expect(citationProblems('src/a.ts', text, (path) => path === page, read)).toEqual([
      'src/a.ts:2: docs/database.md "Names": no such heading',
      'src/a.ts:2: docs/gone.md "X": no such page',
    ]);
  });

  const file = join(REPO, 'docs', 'page.md');
  const files: Record<string, string> = {
    [join(REPO, 'docs', 'other.md')]: '# Other page\n\n## `vidfeeds watch`\n\n## Apache 2.4\n\n## Notes\n\n## Notes\n',
    [join(REPO, 'README.md')]: '# vidfeeds\n',
  };
  const exists = (path: string) => path in files;
  const read = (path: string) => files[path]!;

  it('accepts links to existing pages and headings, and skips code and absolute URLs', () => {
    const text = [
      '[a](other.md) [b](other.md#vidfeeds-watch) [c](other.md#apache-24) [d](other.md#notes-1)',
      '[e](../README.md) [f](https://example.org/nowhere.md) `[g](missing.md)`',
      '```',
      '[h](missing.md)',
      '```',
    ].join('\n');
    expect(linkProblems(file, text, exists, read)).toEqual([]);
  });

  it('names the page, the line and the reason of each broken link', () => {
    const text = '## Here\n[a](missing.md) [b](other.md#nowhere)\n[c](../../outside.md) [d](#here) [e](#there)';
    expect(linkProblems(file, text, exists, read)).toEqual([
      'docs/page.md:2: missing.md: no such file',
      'docs/page.md:2: other.md#nowhere: no heading with that anchor',
      'docs/page.md:3: ../../outside.md: leads outside the repository',
      'docs/page.md:3: #there: no heading with that anchor',
    ]);
  });

  it('names a file of the repository that does not exist, takes a compiled name for its source, and leaves other projects\' files alone', () => {
    const known = new Set([resolve(REPO, 'src/db/site-reader.ts'), resolve(REPO, 'docs/schemas/report.schema.json')]);
    const text = 'see src/db/site-reader.js, schemas/report.schema.json, src/pipeline/gone.ts and src/util/data.cpp';
    expect(pathProblems(file, text, (path) => known.has(path))).toEqual(['docs/page.md:1: src/pipeline/gone.ts: no such file or folder']);
  });
});
