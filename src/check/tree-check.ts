import { lstatSync, readdirSync, readFileSync, readlinkSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { readBuildRecords } from '../pipeline/record/build-record.js';
import type { SavedState } from '../pipeline/saved-state.js';
import { documentHash } from '../render/document-hash.js';
import { compressedFormOf, compressedPath, type Encoding, isCompressible, verifyCompressed } from '../paths/compression.js';
import { STAGING_DIR } from '../pipeline/write/output-writer.js';
import { ownsKey, ownsSiteFiles, type ShardSpec } from '../shard/shard.js';
import type { SiteReader } from '../db/site-reader.js';
import type { Format } from '../formats/format.js';
import { showName } from '../paths/names.js';
import type { SitePaths } from '../paths/site-paths.js';
import { DocumentChecker } from './document-check.js';

/**
 * `vidfeeds check`: whether a served tree is the tree the last build made. Against the build's
 * saved state (what it wrote, with sizes and hashes) it finds files that are missing, truncated or
 * changed; walking the tree it finds files no build wrote where vidfeeds writes (a user's or
 * video's format folder, a site-wide file's name); every recorded document must parse as its
 * format and meet its schema (src/check/document-check.ts); and, given the database, the users and
 * videos in the tree must be exactly the published ones.
 *
 * Memory stays flat in the size of the tree: recorded files are read one at a time from the state,
 * the tree is walked a directory at a time and each file looked up in the state. Only with the
 * database are the tree's names held (one string per user and video).
 */

export interface CheckProblem {
  /** The file or folder concerned, relative to the output directory (`alice/rss/index.rss`, `alice/`). */
  file: string;
  problem: string;
}

export interface TreeCheckInput {
  out: string;
  state: SavedState;
  paths: SitePaths;
  formats: readonly Format[];
  shard?: ShardSpec;
  /** With the site's database: compare the tree's users and videos with the published ones. */
  reader?: SiteReader;
  checker?: DocumentChecker;
}

export interface TreeCheckResult {
  problems: CheckProblem[];
  counts: { recorded: number; files: number; validated: number; users?: number; videos?: number };
  /** Schemas that were not found: those documents were only parsed. */
  missingSchemas: string[];
}

export function checkTree(input: TreeCheckInput): TreeCheckResult {
  const { out, state } = input;
  const problems: CheckProblem[] = [];
  const report = (file: string, problem: string) => problems.push({ file, problem });
  const checker = input.checker ?? new DocumentChecker(input.formats);
  const counts: TreeCheckResult['counts'] = { recorded: 0, files: 0, validated: 0 };
  try {
    if (state.interrupted()) report('', `the last build into it did not finish (${state.file} says a build is in progress and no build holds the lock): build again`);
    for (const { record, file } of safeRecords(out, report)) {
      if (record.failed > 0) report(file.slice(out.length + 1), `the last build had ${record.failed} failed ${record.failed === 1 ? 'document' : 'documents'}, kept as an earlier build wrote them`);
    }

    // The compressed forms the build writes beside each text document (the configuration's compress).
    const encodings = state.compression();
    const compressibleFormats = new Set(input.formats.filter((f) => isCompressible(f.mediaType)).map((f) => f.name));
    // Every recorded file, with the bytes recorded, parsing as its format.
    for (const output of state.outputs()) {
      counts.recorded++;
      const full = join(out, output.path);
      const blocked = blockedPath(out, output.path);
      if (blocked !== null) {
        report(output.path, `missing: ${blocked}`);
        continue;
      }
      const stat = lstatSync(full, { throwIfNoEntry: false });
      if (stat === undefined) {
        report(output.path, 'missing: the last build wrote it');
        continue;
      }
      if (!stat.isFile()) {
        report(output.path, `not a file (a ${stat.isDirectory() ? 'directory' : stat.isSymbolicLink() ? 'symbolic link' : 'special file'}): the last build wrote a file`);
        continue;
      }
      if (output.size >= 0 && stat.size !== output.size) {
        report(output.path, `${stat.size} bytes, the last build wrote ${output.size}${stat.size < output.size ? ' (truncated)' : ''}`);
        continue;
      }
      const body = readFileSync(full);
      if (output.size >= 0 && !documentHash(body).equals(output.hash)) {
        report(output.path, 'changed: its bytes differ from what the last build wrote');
        continue;
      }
      const problem = checker.problem(output.format, body);
      if (problem !== null) report(output.path, `${output.format}: ${problem}`);
      if (encodings.length > 0 && compressibleFormats.has(output.format)) checkForms(out, output.path, body, encodings, report);
    }

    // Nothing unknown where vidfeeds writes.
    const tree = walkTree(input, report, counts);
    if (input.reader !== undefined) comparePublished(input, input.reader, tree, report, counts);
    counts.validated = checker.validated;
    return { problems, counts, missingSchemas: [...checker.missingSchemas] };
  } finally {
    if (input.checker === undefined) checker.close();
  }
}

/**
 * What stands in the way of a recorded file's folders: a folder on its path that is a file, a
 * symbolic link (never followed: the build writes nothing through one) or something else; null
 * when every folder on it is a real folder or missing.
 */
function blockedPath(out: string, path: string): string | null {
  const parts = path.split('/');
  let at = out;
  for (let i = 0; i < parts.length - 1; i++) {
    at = join(at, parts[i]!);
    const stat = lstatSync(at, { throwIfNoEntry: false });
    if (stat === undefined) return null;
    if (stat.isDirectory()) continue;
    const folder = `${parts.slice(0, i + 1).join('/')}/`;
    return stat.isSymbolicLink()
      ? `${folder} is a symbolic link (to ${readlinkSync(at)}), which vidfeeds never writes through`
      : `${folder} is ${stat.isFile() ? 'a file' : 'not a folder'} where the last build wrote a folder`;
  }
  return null;
}

/** A compressed form the last build writes beside a document it recorded: checked with its document. */
function isRecordedForm(state: SavedState, path: string): boolean {
  const form = compressedFormOf(path);
  return form !== null && state.compression().includes(form.encoding) && state.formatOf(form.document) !== undefined;
}

/** Each compressed form of a document is there and decompresses to exactly the document. */
function checkForms(out: string, path: string, body: Buffer, encodings: readonly Encoding[], report: (file: string, problem: string) => void): void {
  for (const encoding of encodings) {
    const formPath = compressedPath(path, encoding);
    let form: Buffer;
    try {
      form = readFileSync(join(out, formPath));
    } catch {
      report(formPath, `missing: the last build wrote a ${encoding} form beside ${path}`);
      continue;
    }
    const verdict = verifyCompressed(body, form, encoding);
    if (!verdict.ok) report(formPath, verdict.problem);
  }
}

function safeRecords(out: string, report: (file: string, problem: string) => void) {
  try {
    const records = readBuildRecords(out);
    if (records.length === 0) report('', 'no build record (.vidfeeds-build*.json): the last build did not finish, or read a database without a change log');
    return records;
  } catch (error) {
    report('', (error as Error).message);
    return [];
  }
}

interface TreeKeys {
  users: Set<string>;
  videos: Set<string>;
}

/**
 * Walks the tree: at the top, the site-wide files' names and the staging folder; below, every
 * user's and video's format folders. Files elsewhere are the operator's (vidfeeds never writes or
 * removes them) and are left alone.
 */
function walkTree(input: TreeCheckInput, report: (file: string, problem: string) => void, counts: TreeCheckResult['counts']): TreeKeys {
  const { out, state, paths, shard } = input;
  const keys: TreeKeys = { users: new Set(), videos: new Set() };
  const userDirs = new Set(input.formats.filter((f) => f.scope === 'user').map((f) => (f as { dir: string }).dir));
  for (const entry of sortedEntries(out)) {
    const name = entry.name;
    if (name === STAGING_DIR) {
      report(`${name}/`, 'the staging folder of a build that was killed (the next build removes it)');
      continue;
    }
    if (name.startsWith('.')) continue;
    if (entry.isSymbolicLink() && (paths.isReserved(name) || isOwnerFolder(out, name, paths))) {
      report(`${name}`, `a symbolic link (to ${readlinkSync(join(out, name))}) where vidfeeds writes: builds never write or remove through it`);
      continue;
    }
    if (!entry.isDirectory()) {
      if (paths.isReserved(name) && ownsSiteFiles(shard)) {
        counts.files++;
        if (state.formatOf(name) === undefined && !isRecordedForm(state, name)) report(name, 'not written by the last build, under the name of a site-wide file');
      }
      continue;
    }
    if (!ownsKey(shard, name)) continue;
    for (const sub of sortedEntries(join(out, name))) {
      if (!paths.isFormatDir(sub.name)) continue;
      if (!sub.isDirectory()) {
        const path = `${name}/${sub.name}`;
        report(path, sub.isSymbolicLink() ? `a symbolic link (to ${readlinkSync(join(out, path))}) where vidfeeds writes a folder: builds never write or remove through it` : `a ${sub.isFile() ? 'file' : 'special file'} where vidfeeds writes a folder`);
        continue;
      }
      const found = strayFiles(input, `${name}/${sub.name}`, report, counts);
      if (found > 0) (userDirs.has(sub.name) ? keys.users : keys.videos).add(name);
    }
  }
  return keys;
}

/** Reports every file under `dir` that no build recorded; returns how many files it holds. */
function strayFiles(input: TreeCheckInput, dir: string, report: (file: string, problem: string) => void, counts: TreeCheckResult['counts']): number {
  let files = 0;
  for (const entry of sortedEntries(join(input.out, dir))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      files += strayFiles(input, path, report, counts);
      continue;
    }
    files++;
    counts.files++;
    if (entry.isSymbolicLink()) {
      report(path, `a symbolic link (to ${readlinkSync(join(input.out, path))}) where vidfeeds writes: builds never write or remove through it`);
      continue;
    }
    if (input.state.formatOf(path) === undefined && !isRecordedForm(input.state, path)) report(path, 'not written by the last build (a stray file where vidfeeds writes)');
  }
  return files;
}

/**
 * Whether a link at the top of the tree stands in a user's or video's place: a publishable name
 * whose target holds format folders (listed, never written).
 */
function isOwnerFolder(out: string, name: string, paths: SitePaths): boolean {
  if (paths.problem(name) !== null) return false;
  try {
    return readdirSync(join(out, name)).some((entry) => paths.isFormatDir(entry));
  } catch {
    return false;
  }
}

function sortedEntries(dir: string): Dirent[] {
  return readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The tree's users and videos against the published ones in the database, in this part of the site. */
function comparePublished(input: TreeCheckInput, reader: SiteReader, tree: TreeKeys, report: (file: string, problem: string) => void, counts: TreeCheckResult['counts']): void {
  const { paths, shard } = input;
  const publishable = (key: string) => paths.problem(key) === null && ownsKey(shard, key);
  counts.users = tree.users.size;
  counts.videos = tree.videos.size;
  reader.snapshot(() => {
    for (const row of reader.users()) {
      if (!publishable(row.username)) continue;
      if (!tree.users.delete(row.username)) report(`${row.username}/`, `user ${showName(row.username)} is published in the database, but the tree has no document of theirs`);
    }
    for (const id of reader.publishableVideoIds()) {
      if (!publishable(id)) continue;
      if (!tree.videos.delete(id)) report(`${id}/`, `video ${showName(id)} is published in the database, but the tree has no document of it`);
    }
  });
  for (const name of tree.users) report(`${name}/`, `user documents of ${showName(name)}, who is not a published user in the database (private, suspended, deleted or unknown)`);
  for (const name of tree.videos) report(`${name}/`, `video documents of ${showName(name)}, which is not a published video in the database (private, deleted or unknown)`);
}

