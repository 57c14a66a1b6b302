import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmdirSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';

/**
 * Where a build puts its files. The pipeline talks only to this interface, so it runs against
 * memory in tests and against a directory in production.
 */
export interface OutputWriter {
  /** Replaces the file at `path` (relative, `/`-separated) with `body`, whole. */
  write(path: string, body: Buffer): void;
  /** Size in bytes of the file at `path`, or null when there is none. */
  size(path: string): number | null;
  /** Removes the file at `path` if it is there; returns whether it was. */
  remove(path: string): boolean;
}

/**
 * The temporary name a file is written under before it is renamed into place: hidden (a dot file
 * is never served, nor a valid user or video name), beside the target so the rename stays inside
 * one directory. It is the same for every build, so a file left by a killed build is replaced the
 * next time that document is written.
 */
export function tempName(file: string): string {
  return `.${file}.vidfeeds-tmp`;
}

/**
 * Writes into a directory. Every file is written beside its target under a hidden temporary name
 * and renamed into place, so a reader sees the old file or the new one, never a part.
 *
 * This is the build's hot loop with the file system: per file one open, write, close and rename,
 * and a mkdir only when the directory changes (docs/performance.md).
 */
export class DirectoryWriter implements OutputWriter {
  readonly root: string;
  private lastDir = '';

  constructor(root: string, private readonly durable = false) {
    this.root = resolve(root);
    mkdirSync(this.root, { recursive: true });
  }

  /** Resolves a relative output path, refusing anything that would land outside the root. */
  private target(path: string): string {
    const full = resolve(this.root, path);
    const rel = relative(this.root, full);
    if (rel === '' || rel.startsWith('..') || rel.split(sep).includes('..') || resolve(this.root, rel) !== full) {
      throw new Error(`refusing to write outside the output directory: ${JSON.stringify(path)}`);
    }
    return full;
  }

  write(path: string, body: Buffer): void {
    const full = this.target(path);
    const dir = dirname(full);
    if (dir !== this.lastDir) {
      mkdirSync(dir, { recursive: true });
      this.lastDir = dir;
    }
    const temp = join(dir, tempName(basename(full)));
    const fd = openSync(temp, 'w', 0o644);
    try {
      let offset = 0;
      while (offset < body.length) offset += writeSync(fd, body, offset, body.length - offset);
      if (this.durable) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, full);
  }

  size(path: string): number | null {
    try {
      const stat = statSync(this.target(path), { throwIfNoEntry: false });
      return stat?.isFile() ? stat.size : null;
    } catch {
      return null;
    }
  }

  remove(path: string): boolean {
    const full = this.target(path);
    try {
      unlinkSync(full);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
    this.lastDir = '';
    // Remove directories the removal emptied, up to (not including) the root.
    for (let dir = dirname(full); dir !== this.root && dir.startsWith(this.root + sep); dir = dirname(dir)) {
      try {
        rmdirSync(dir);
      } catch {
        break;
      }
    }
    return true;
  }

  /** Called when a build ends; nothing is left to clean (kept for the callers' symmetry). */
  close(): void {}
}

/** Keeps files in memory: for tests and for renderers' callers that want bytes, not files. */
export class MemoryWriter implements OutputWriter {
  readonly files = new Map<string, Buffer>();
  writes = 0;

  write(path: string, body: Buffer): void {
    if (path.split('/').some((part) => part === '..' || part === '.' || part === '') || path.startsWith('/')) {
      throw new Error(`refusing to write outside the output directory: ${JSON.stringify(path)}`);
    }
    this.files.set(path, Buffer.from(body));
    this.writes++;
  }

  size(path: string): number | null {
    return this.files.get(path)?.length ?? null;
  }

  remove(path: string): boolean {
    return this.files.delete(path);
  }

  text(path: string): string {
    const body = this.files.get(path);
    if (body === undefined) throw new Error(`no file ${path}; have ${[...this.files.keys()].slice(0, 20).join(', ')}`);
    return body.toString('utf8');
  }
}
