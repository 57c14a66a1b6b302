import { createHash } from 'node:crypto';
import { opendirSync, readdirSync, readFileSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { ALL_ENCODINGS, compressedFormOf, compressedPath, type Encoding } from '../paths/compression.js';
import type { Format } from '../formats/format.js';
import { keyedUrlPaths, matchFile } from '../paths/url-scheme.js';
import { byCodePoint } from '../db/by-code-point.js';
import type { RouteMatch, Routes } from './routes.js';

/**
 * The manifest of a built tree for object stores and CDNs that set headers per object at upload
 * (S3, GCS, R2, Azure Blob): every file the table serves, its content type, Cache-Control, size and
 * SHA-256, the keys it answers under, and its pre-compressed forms with their encoding. A sync
 * compares sizes and hashes with what it uploaded last and sends only what changed
 * (docs/hosting.md). Files the table does not name (dot files, stray files) are left out and counted.
 */

export interface ManifestEntry {
  /** File under the tree, `/`-separated. */
  file: string;
  contentType: string;
  cacheControl: string;
  /** Bytes of the file. */
  size: number;
  /** SHA-256 of the file's bytes, hex. */
  sha256: string;
  /** MD5 of the file's bytes, hex: what an object store shows as the ETag of a single upload. */
  md5: string;
  /**
   * The `Link` header the file is sent with, when it has one: a feed's WebSub hubs and its own URL
   * (`<hub>; rel="hub", <url>; rel="self"`).
   */
  link?: string;
  /**
   * Other response headers the file must be sent with, when its format has any (the embed page's
   * `Content-Security-Policy: frame-ancestors *`): for a CDN that sets headers per object or path.
   */
  headers?: Record<string, string>;
  /** Object keys below the base path that must answer with this file (decoded, no leading `/`). */
  keys: string[];
  /** Its pre-compressed forms (`compress` in the configuration): same Content-Type and Cache-Control. */
  compressed: CompressedEntry[];
}

export interface CompressedEntry {
  /** File under the tree: the document's with `.gz` or `.br` appended. */
  file: string;
  /** The Content-Encoding it is sent with. */
  contentEncoding: Encoding;
  size: number;
  sha256: string;
  md5: string;
}

export interface Manifest {
  generator: string;
  /** Path of the base URL ('' at the root): the bucket prefix the keys go under. */
  basePath: string;
  files: ManifestEntry[];
}

/**
 * Files of the tree in the order an object store lists keys (ascending UTF-8 bytes of the path: a
 * folder `a` sorts as `a/`, after `a-b` and `a.b`); dot-named files and folders are never listed.
 * Only the folders on the way are held.
 */
function* walk(root: string, relative = ''): Generator<string> {
  for (const name of sortedNames(join(root, relative))) {
    const folder = name.endsWith('/');
    const path = `${relative === '' ? '' : `${relative}/`}${folder ? name.slice(0, -1) : name}`;
    if (folder) yield* walk(root, path);
    else yield path;
  }
}

/**
 * Files of the tree in the order the file system gives them, each with the names of the files
 * beside it: a folder's subfolders are read as they come, and only the names of its files are
 * held. The top folder, which holds a folder per user and video (hundreds of thousands), is read
 * a batch of entries at a time; the folders below it hold a handful each (a user's formats, a
 * feed's archive pages) and are read whole, one call and no directory handle each, which allocates
 * a third of what a handle does (Node's `Dir` makes its promise methods anew for every folder).
 * Dot-named files and folders are never listed. For a reader that needs no order: the full compare
 * of a deploy, which matches the store's listing by key.
 */
function* walkAsStored(root: string, relative = ''): Generator<{ file: string; siblings: ReadonlySet<string> }> {
  const files: string[] = [];
  const folder = join(root, relative);
  for (const entry of relative === '' ? entriesOf(folder) : readdirSync(folder, { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue;
    const path = `${relative === '' ? '' : `${relative}/`}${entry.name}`;
    if (entry.isDirectory()) yield* walkAsStored(root, path);
    else if (entry.isFile()) files.push(entry.name);
  }
  const siblings = new Set(files);
  for (const name of files) yield { file: `${relative === '' ? '' : `${relative}/`}${name}`, siblings };
}

/** A folder's entries a batch at a time, through a directory handle closed however the reading ends. */
function* entriesOf(folder: string): Generator<Dirent> {
  const dir = opendirSync(folder);
  try {
    for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) yield entry;
  } finally {
    dir.closeSync();
  }
}

/** A folder's files and folders (with a final `/`) in key order: only names are kept, a large folder's entries are not. */
function sortedNames(folder: string): string[] {
  const names: string[] = [];
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue;
    if (entry.isDirectory()) names.push(`${entry.name}/`);
    else if (entry.isFile()) names.push(entry.name);
  }
  return names.sort(byCodePoint);
}

/** Which format a file under the tree belongs to, or null when the table serves no URL from it. */
export function routeOfFile(routes: Routes, file: string): RouteMatch | null {
  return matchFile(routes, file);
}

/** The keys (below the base path) a file answers under: a directory URL also without its slash. */
export function keysOf(match: RouteMatch): string[] {
  if (match.kind === 'site') return [match.file];
  return keyedUrlPaths(match.format, match.key, match.page);
}

function fingerprint(root: string, file: string): { size: number; sha256: string; md5: string } {
  const body = readFileSync(join(root, ...file.split('/')));
  return { size: body.length, sha256: createHash('sha256').update(body).digest('hex'), md5: createHash('md5').update(body).digest('hex') };
}

/** The `Link` header of a WebSub topic: each hub, then the feed's own URL. */
export function websubLink(hubs: readonly string[], self: string): string {
  return [...hubs.map((hub) => `<${hub}>; rel="hub"`), `<${self}>; rel="self"`].join(', ');
}

export type ManifestArgs = [
  routes: Routes,
  root: string,
  basePath: string,
  generator: string,
  cacheControl: (format: Format) => string,
  /** The `Link` header of a document, if it has one (a WebSub feed's). */
  linkOf?: (match: RouteMatch) => string | undefined,
];

export function buildManifest(...args: ManifestArgs): { manifest: Manifest; ignored: string[] } {
  const steps = manifestSteps(...args);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return step.value;
  }
}

/** Builds the manifest, yielding after each file it reads. */
function* manifestSteps(...[routes, root, basePath, generator, cacheControl, linkOf = () => undefined]: ManifestArgs): Generator<void, { manifest: Manifest; ignored: string[] }> {
  const files: ManifestEntry[] = [];
  const byFile = new Map<string, ManifestEntry>();
  const forms: Array<{ file: string; document: string; encoding: Encoding }> = [];
  const ignored: string[] = [];
  for (const file of walk(root)) {
    const match = routeOfFile(routes, file);
    if (match === null) {
      const form = compressedFormOf(file);
      if (form !== null && routeOfFile(routes, form.document) !== null) forms.push({ file, document: form.document, encoding: form.encoding });
      else ignored.push(file);
      continue;
    }
    const entry = entryOf(root, file, match, cacheControl, linkOf);
    files.push(entry);
    byFile.set(file, entry);
    yield;
  }
  // A form whose document is gone (a tree edited by hand) has nothing to be sent for.
  for (const { file, document, encoding } of forms) {
    const entry = byFile.get(document);
    if (entry === undefined) ignored.push(file);
    else entry.compressed.push({ file, contentEncoding: encoding, ...fingerprint(root, file) });
    yield;
  }
  return { manifest: { generator, basePath, files }, ignored };
}

/**
 * The manifest's entries one at a time, in the order the file system gives them (see
 * `walkAsStored`), each with the compressed forms found beside it, the event loop free every few files so that a signal is heard
 * while a large tree is read and hashed; it ends early once `stop` is aborted. Only the entry being
 * made is held, whatever the size of the tree.
 */
export async function* manifestEntries(stop: AbortSignal, ...[routes, root, , , cacheControl, linkOf = () => undefined]: ManifestArgs): AsyncGenerator<ManifestEntry> {
  let n = 0;
  for (const { file, siblings } of walkAsStored(root)) {
    if (++n % 32 === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    if (stop.aborted) return;
    const match = routeOfFile(routes, file);
    if (match === null) continue;
    const entry = entryOf(root, file, match, cacheControl, linkOf);
    const name = file.slice(file.lastIndexOf('/') + 1);
    // Its forms in name order (`.br` before `.gz`), as the whole manifest lists them.
    for (const encoding of ALL_ENCODINGS) {
      if (siblings.has(compressedPath(name, encoding))) entry.compressed.push({ file: compressedPath(file, encoding), contentEncoding: encoding, ...fingerprint(root, compressedPath(file, encoding)) });
    }
    yield entry;
  }
}

function entryOf(root: string, file: string, match: RouteMatch, cacheControl: (format: Format) => string, linkOf: (match: RouteMatch) => string | undefined): ManifestEntry {
  return entryOfRead(file, match, fingerprint(root, file), cacheControl, linkOf);
}

/** The entry of a file already read and hashed (`read`), its compressed forms still to add. */
export function entryOfRead(
  file: string,
  match: RouteMatch,
  read: { size: number; sha256: string; md5: string },
  cacheControl: (format: Format) => string,
  linkOf: (match: RouteMatch) => string | undefined,
): ManifestEntry {
  const entry: ManifestEntry = {
    file,
    contentType: match.format.mediaType,
    cacheControl: cacheControl(match.format),
    size: read.size,
    sha256: read.sha256,
    md5: read.md5,
    keys: keysOf(match),
    compressed: [],
  };
  if (match.format.headers !== undefined) entry.headers = { ...match.format.headers };
  const link = linkOf(match);
  if (link !== undefined) entry.link = link;
  return entry;
}
