import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tempDir } from './temp-dir.js';

/**
 * Independent consumers of our formats: Debian's xmllint (libxml2), jing (RELAX NG), rapper
 * (Raptor RDF) and Python's feedparser, installed by .ci/run. Each helper takes many documents at
 * once, since starting jing's JVM dominates the time.
 */

/** The grammars and samples the tests validate with, kept in the repository (see its README). */
export const SCHEMAS = resolve(import.meta.dirname, '../../schemas/formats');
if (!existsSync(join(SCHEMAS, 'catalog.xml'))) {
  throw new Error(`the test schemas are not at ${SCHEMAS}: schemas/formats belongs to the repository; is the checkout complete?`);
}

export interface ToolResult {
  ok: boolean;
  output: string;
}

function run(command: string, args: string[], env: Record<string, string> = {}, cwd?: string): ToolResult {
  const result = spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, ...env }, cwd, maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw new Error(`${command} could not run (is it installed? .ci/run installs it): ${result.error.message}`);
  const output = `${result.stdout}${result.stderr}`
    .split('\n')
    .filter((line) => !line.includes('Unable to locate') || !line.includes('jing'))
    .join('\n')
    .trim();
  return { ok: result.status === 0, output };
}

/** Writes documents to files in a temporary folder; returns their paths. */
export function materialise(documents: Record<string, string>, extension: string): { files: string[]; cleanup: () => void } {
  const { dir, cleanup } = tempDir('vidfeeds-validate-');
  const files = Object.entries(documents).map(([name, body], i) => {
    const file = join(dir, `${i}-${name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 80)}${extension}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, body);
    return file;
  });
  return { files, cleanup };
}

/** Validates documents with jing against a RELAX NG schema (compact syntax when it ends in .rnc). */
export function jing(schema: string, documents: Record<string, string>): ToolResult {
  if (Object.keys(documents).length === 0) throw new Error('jing: no documents to validate');
  const { files, cleanup } = materialise(documents, '.xml');
  try {
    const args = schema.endsWith('.rnc') ? ['-c', schema, ...files] : [schema, ...files];
    return run('jing', args);
  } finally {
    cleanup();
  }
}

/** Validates documents with xmllint against an XML Schema, offline through the catalog. */
export function xmllintSchema(schema: string, documents: Record<string, string>): ToolResult {
  if (Object.keys(documents).length === 0) throw new Error('xmllint: no documents to validate');
  const { files, cleanup } = materialise(documents, '.xml');
  try {
    return run('xmllint', ['--noout', '--nonet', '--schema', schema, ...files], { XML_CATALOG_FILES: join(SCHEMAS, 'catalog.xml') });
  } finally {
    cleanup();
  }
}

/** Validates documents with xmllint against a DTD, offline through the catalog. */
export function xmllintDtd(dtd: string, documents: Record<string, string>): ToolResult {
  const { files, cleanup } = materialise(documents, '.xml');
  try {
    return run('xmllint', ['--noout', '--nonet', '--dtdvalid', dtd, ...files], { XML_CATALOG_FILES: join(SCHEMAS, 'catalog.xml') });
  } finally {
    cleanup();
  }
}

/** Checks well-formedness with xmllint. */
export function xmllintWellFormed(documents: Record<string, string>): ToolResult {
  const { files, cleanup } = materialise(documents, '.xml');
  try {
    return run('xmllint', ['--noout', '--nonet', ...files]);
  } finally {
    cleanup();
  }
}

/** Evaluates an XPath expression with xmllint; returns its text. */
export function xpath(document: string, expression: string): string {
  const { files, cleanup } = materialise({ doc: document }, '.xml');
  try {
    const result = run('xmllint', ['--xpath', expression, files[0]!]);
    return result.output;
  } finally {
    cleanup();
  }
}

/** Parses RDF/XML with rapper; returns the N-Triples. */
export function rapperTriples(document: string, baseUri: string): ToolResult {
  const { files, cleanup } = materialise({ doc: document }, '.rdf');
  try {
    return run('rapper', ['-q', '-i', 'rdfxml', '-o', 'ntriples', files[0]!, baseUri]);
  } finally {
    cleanup();
  }
}

export interface ParsedFeed {
  bozo: boolean;
  bozo_exception: string | null;
  version: string;
  feed: Record<string, unknown>;
  entries: Array<Record<string, unknown>>;
}

/** Parses feeds with Python's feedparser (Debian python3-feedparser). */
export function feedparser(documents: Record<string, string>): Record<string, ParsedFeed> {
  const { files, cleanup } = materialise(documents, '.xml');
  try {
    const script = `
import sys, json, feedparser
out = {}
for path in sys.argv[1:]:
    d = feedparser.parse(path)
    out[path] = {"bozo": bool(d.bozo), "bozo_exception": str(d.get("bozo_exception")) if d.bozo else None,
                 "version": d.version, "feed": d.feed, "entries": d.entries}
print(json.dumps(out, default=str))
`;
    const result = spawnSync('/usr/bin/python3', ['-c', script, ...files], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    if (result.status !== 0) throw new Error(`feedparser failed: ${result.stderr}`);
    const parsed = JSON.parse(result.stdout) as Record<string, ParsedFeed>;
    const names = Object.keys(documents);
    return Object.fromEntries(files.map((file, i) => [names[i]!, parsed[file]!]));
  } finally {
    cleanup();
  }
}

export interface ParsedOpml {
  bozo: boolean;
  bozo_exception: string | null;
  meta: Record<string, unknown>;
  feeds: Array<{ url: string; title: string; categories: string[][]; tags: string[] }>;
  lists: unknown[];
  opportunities: unknown[];
}

/** Reads OPML subscription lists with Python's listparser (Debian python3-listparser). */
export function listparser(documents: Record<string, string>): Record<string, ParsedOpml> {
  const { files, cleanup } = materialise(documents, '.opml');
  try {
    const script = `
import sys, json, listparser
out = {}
for path in sys.argv[1:]:
    d = listparser.parse(path)
    out[path] = {"bozo": bool(d.bozo), "bozo_exception": str(d.get("bozo_exception")) if d.bozo else None,
                 "meta": d.meta, "feeds": d.feeds, "lists": d.lists, "opportunities": d.opportunities}
print(json.dumps(out, default=str))
`;
    const result = spawnSync('/usr/bin/python3', ['-c', script, ...files], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    if (result.status !== 0) throw new Error(`listparser failed (is python3-listparser installed? .ci/run installs it): ${result.stderr}`);
    const parsed = JSON.parse(result.stdout) as Record<string, ParsedOpml>;
    const names = Object.keys(documents);
    return Object.fromEntries(files.map((file, i) => [names[i]!, parsed[file]!]));
  } finally {
    cleanup();
  }
}
