import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { entryOfRead, routeOfFile, type Manifest, type ManifestArgs, type ManifestEntry } from '../hosting/manifest.js';
import { compressedPath, type Encoding } from '../paths/compression.js';
import type { StateChanges } from '../pipeline/state-changes.js';
import { documentHasher } from '../render/document-hash.js';

/**
 * What an incremental deploy sends: the documents the builds after the last published one changed,
 * each read once while the build lock is held. The one read gives the store's hashes, the check
 * against what the build recorded, and (up to `snapshotBytes` in all) the bytes to send, so that
 * builds can go on while the uploads do. Files are read a piece at a time, so a signal is heard
 * inside a document of hundreds of megabytes, not after it.
 */

export interface ChangedDocuments {
  manifest: Manifest;
  /** Documents added after the last published build (no object of theirs is in the store yet). */
  newFiles: Set<string>;
  removedFiles: string[];
  encodings: Encoding[];
  /** The bytes of every file of the manifest, by file; null when they came to more than `snapshotBytes`. */
  bodies: Map<string, Buffer> | null;
  /** Changed documents missing from the tree or not as the build wrote them, in words. */
  unlike: string[];
  /** The stop came before every document was read: the manifest holds only those read. */
  stopped: boolean;
}

/** The most of the tree's bytes an incremental deploy holds, so that builds need not wait for its uploads. */
export const SNAPSHOT_BYTES = 32 * 2 ** 20;

/** Bytes read at a time: the event loop turns (and a stop is looked at) between pieces. */
const PIECE_BYTES = 4 * 2 ** 20;

export async function changedDocuments(
  state: StateChanges,
  since: number,
  options: { encodings: Encoding[]; stop: AbortSignal; snapshotBytes: number },
  ...args: ManifestArgs
): Promise<ChangedDocuments> {
  const [routes, root, basePath, generator, cacheControl, linkOf = () => undefined] = args;
  const changed = [...state.changedAfter(since)];
  const result: ChangedDocuments = {
    manifest: { generator, basePath, files: [] },
    newFiles: new Set(changed.filter((c) => c.isNew).map((c) => c.path)),
    removedFiles: [...state.removedAfter(since)],
    encodings: options.encodings,
    bodies: new Map(),
    unlike: [],
    stopped: false,
  };
  const reader = new SnapshotReader(root, options.stop, options.snapshotBytes);
  for (const { path } of changed) {
    const read = await reader.read(path, true);
    if (read === STOPPED) break;
    const recorded = state.recordOf(path);
    if (read === null) {
      if (recorded !== undefined) result.unlike.push(`${path} is missing`);
      continue;
    }
    if (recorded !== undefined && (read.size !== recorded.size || !read.hash.equals(recorded.hash))) {
      result.unlike.push(`${path} is not what the build wrote (${read.size} bytes, the build's ${recorded.size})`);
    }
    const match = routeOfFile(routes, path);
    if (match === null) continue;
    const entry = entryOfRead(path, match, read, cacheControl, linkOf);
    if ((await addForms(entry, options.encodings, reader)) === STOPPED) break;
    result.manifest.files.push(entry);
  }
  result.stopped = options.stop.aborted;
  result.bodies = reader.bodies;
  return result;
}

/** Adds the compressed forms of `encodings` found beside the document. */
async function addForms(entry: ManifestEntry, encodings: readonly Encoding[], reader: SnapshotReader): Promise<typeof STOPPED | undefined> {
  for (const encoding of encodings) {
    const file = compressedPath(entry.file, encoding);
    const read = await reader.read(file, false);
    if (read === STOPPED) return STOPPED;
    if (read !== null) entry.compressed.push({ file, contentEncoding: encoding, size: read.size, sha256: read.sha256, md5: read.md5 });
  }
  return undefined;
}

const STOPPED = Symbol('stopped');

interface FileRead {
  size: number;
  sha256: string;
  md5: string;
  /** The build state's hash of the bytes (src/render/document-hash.ts), when asked for. */
  hash: Buffer;
}

/** Reads files a piece at a time, keeping their bytes while they fit the snapshot. */
class SnapshotReader {
  /** The bytes kept, or null once they would pass the bound (the deploy then reads as it sends). */
  bodies: Map<string, Buffer> | null = new Map();
  private kept = 0;

  constructor(
    private readonly root: string,
    private readonly stop: AbortSignal,
    private readonly snapshotBytes: number,
  ) {}

  /** The file's size and hashes; null when it is not on the disk; STOPPED once the stop came. */
  async read(file: string, withHash: boolean): Promise<FileRead | null | typeof STOPPED> {
    if (this.stop.aborted) return STOPPED;
    const handle = await open(join(this.root, ...file.split('/'))).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return null;
      throw error;
    });
    if (handle === null) return null;
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) return null;
      const keep = this.bodies !== null && this.kept + stat.size <= this.snapshotBytes;
      if (!keep) this.bodies = null;
      const body = Buffer.allocUnsafe(keep ? stat.size : Math.min(stat.size, PIECE_BYTES));
      const sha256 = createHash('sha256');
      const md5 = createHash('md5');
      const hash = withHash ? documentHasher() : null;
      let size = 0;
      for (;;) {
        if (this.stop.aborted) return STOPPED;
        const at = keep ? size : 0;
        const { bytesRead } = await handle.read(body, at, Math.min(PIECE_BYTES, body.length - at), size);
        if (bytesRead === 0) break;
        const piece = body.subarray(at, at + bytesRead);
        sha256.update(piece);
        md5.update(piece);
        hash?.update(piece);
        size += bytesRead;
        if (keep && size === body.length) break;
      }
      if (keep) {
        this.bodies?.set(file, body.subarray(0, size));
        this.kept += size;
      }
      return { size, sha256: sha256.digest('hex'), md5: md5.digest('hex'), hash: hash?.digest() ?? Buffer.alloc(0) };
    } finally {
      await handle.close();
    }
  }
}
