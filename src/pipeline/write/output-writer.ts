import {
  accessSync,
  closeSync,
  constants,
  lstatSync,
  readlinkSync,
  mkdirSync,
  opendirSync,
  openSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { quoted } from '../../config/shown-text.js';

/**
 * Where a build puts its files. The pipeline talks only to this interface, so it runs against
 * memory in tests and against a directory in production.
 */
export interface OutputWriter {
  /**
   * Replaces the file at `path` (relative, `/`-separated) with `body`, whole. The caller may reuse
   * `body` once this returns (write-documents.ts does): a writer copies what it keeps.
   */
  write(path: string, body: Buffer): void;
  /** Size in bytes of the file at `path`, or null when there is none. */
  size(path: string): number | null;
  /** Removes the file at `path` if it is there; returns whether it was. */
  remove(path: string): boolean;
  /**
   * Removes the folder at `path` if it is there and empty (never through a link); returns whether
   * it was. For folders a killed build made and never filled: `remove` takes away the folders it
   * empties itself.
   */
  removeFolder?(path: string): boolean;
  /** Whether the file at `path` holds exactly `body` (to check a tree after an interrupted build). */
  holds?(path: string, body: Buffer): boolean;
  /** The bytes of the file at `path` when it is a file of `size` bytes, else null (a sitemap part to splice into). */
  read?(path: string, size: number): Buffer | null;
  /** Waits until every write so far is done, for writers that write in the background; throws their error. */
  flush?(): void;
  /** Whether it holds no files at all: then a first build has nothing on disk to compare with. */
  isEmpty?(): boolean;
  /**
   * Why a file cannot be written at `path`, or null: a symbolic link or a file where a folder of
   * its path should be, a folder that cannot be written (read-only, immutable), a directory or a
   * link in the file's place (PathGuard). Such a document is a failed document, not a failed build.
   */
  blocked?(path: string): string | null;
  /** The output directory, for a writer that writes into one. */
  readonly root?: string;
}

/** Name of the staging folder inside the output root; dot-named, so it is never served. */
export const STAGING_DIR = '.vidfeeds-staging';

/** How many directories a DirectoryMaker remembers before it starts again from the root. */
const KNOWN_DIRECTORIES = 4096;

/**
 * Makes the directories files go into, with one mkdir per directory it creates: it remembers the
 * directories it has made or seen (a bounded set), walks up from a new one to the nearest known
 * ancestor and creates downwards from there. A site's layout puts nearly every file in a folder
 * of its own (`alice/rss/index.rss`), so this is one mkdir per file where a recursive mkdir
 * would make two or three calls (docs/performance.md).
 */
export class DirectoryMaker {
  private readonly known = new Set<string>();

  /** `root` must exist. */
  constructor(private readonly root: string) {
    this.known.add(root);
  }

  /** Makes `dir` (inside the root) and its missing parents. */
  ensure(dir: string): void {
    if (this.known.has(dir)) return;
    const missing: string[] = [];
    for (let at = dir; !this.known.has(at); at = dirname(at)) {
      if (dirname(at) === at) throw new Error(`${dir} is not inside ${this.root}`);
      missing.push(at);
    }
    if (this.known.size + missing.length > KNOWN_DIRECTORIES) this.forget();
    for (let i = missing.length - 1; i >= 0; i--) {
      try {
        mkdirSync(missing[i]!);
      } catch (error) {
        // There already: made by an earlier build. A file in its place fails the write, naming it.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      this.known.add(missing[i]!);
    }
  }

  /** Forgets every directory but the root: after a removal, a remembered directory may be gone. */
  forget(): void {
    this.known.clear();
    this.known.add(this.root);
  }
}

/**
 * A relative path that resolves to itself: `/`-separated names, none empty, none `.` or `..`, no
 * backslash or NUL, and not starting with `..` (which the careful rule refuses too). Nearly every
 * document path is one, and for those the absolute path is plain concatenation; anything else
 * takes the careful rule below.
 */
const PLAIN_PATH = /^(?!\.\.|\.(?:\/|$))(?:[^/\\\0]+\/(?!\.\.?(?:\/|$)))*[^/\\\0]+$/;

/**
 * The absolute path of `path` (relative, `/`-separated) inside `root` (absolute, normalized),
 * refusing anything that would land outside it or in the staging folder.
 */
export function resolveInside(root: string, path: string): string {
  if (path === STAGING_DIR || path.startsWith(`${STAGING_DIR}/`)) throw new Error(`refusing to write into the staging folder: ${path}`);
  if (sep === '/' && PLAIN_PATH.test(path)) return inside(root, path);
  const full = resolve(root, path);
  const rel = relative(root, full);
  if (rel === '' || rel.startsWith('..') || rel.split(sep).includes('..') || resolve(root, rel) !== full) {
    throw new Error(`refusing to write outside the output directory: ${quoted(path)}`);
  }
  if (rel.split(sep)[0] === STAGING_DIR) throw new Error(`refusing to write into the staging folder: ${path}`);
  return full;
}

/** How many folders a PathGuard remembers before it starts again. */
const KNOWN_FOLDERS = 4096;

/**
 * What a PathGuard knows of a folder: there and a real folder (`real`), that and writable
 * (`writable`), or missing when first asked about and so made by this build's own writes (`made`),
 * which no one else can have replaced while the build holds the output's lock.
 */
type FolderState = 'real' | 'writable' | 'made';

/**
 * Nothing is written, renamed or removed through a symbolic link, whatever the tree holds: every
 * folder on a path below the root is looked at with lstat (never followed) before a file is
 * placed or removed there, and remembered once it is known. The root itself is the operator's
 * choice and may be a link.
 *
 * A folder costs one lstat, and one access check before the first write into it: the guard asks
 * the disk once per owner's folder, not per file. A tree that held nothing served when the guard
 * first looked (a first build) holds only what this build made, so there it asks nothing below
 * the root, but for dot-named entries, which an empty tree may still hold.
 */
export class PathGuard {
  private readonly known = new Map<string, FolderState>();
  private ownTree: boolean | undefined;

  constructor(private readonly root: string) {}

  /** Why `full` (absolute, inside the root) cannot be written (`write`) or removed, or null. */
  problem(full: string, write: boolean): string | null {
    this.ownTree ??= !holdsServedEntries(this.root);
    const rel = this.relativeOf(full);
    const trusted = this.ownTree && !rel.startsWith('.');
    if (this.known.size >= KNOWN_FOLDERS) this.known.clear();
    // The deepest folder there is on the path, which a new entry goes into: it must take one.
    let deepest = this.root;
    let state: FolderState = this.known.get(this.root) ?? 'real';
    let reached = true;
    for (let slash = rel.indexOf('/'); slash !== -1; slash = rel.indexOf('/', slash + 1)) {
      const at = inside(this.root, rel.slice(0, slash));
      const seen = this.known.get(at);
      if (seen !== undefined) {
        [deepest, state] = [at, seen];
        if (seen === 'made') break;
        continue;
      }
      const stat = trusted ? undefined : lstatSync(at, { throwIfNoEntry: false });
      if (stat === undefined) {
        // Missing: the write makes it and the folders below it.
        if (write) this.rememberMade(rel, slash);
        reached = false;
        break;
      }
      const shown = `${rel.slice(0, slash)}/`;
      if (stat.isSymbolicLink()) return `${shown} is a symbolic link (to ${readlinkSync(at)}): vidfeeds never writes or removes through one`;
      if (!stat.isDirectory()) return `${shown} is ${stat.isFile() ? 'a file' : 'not a folder'} where a folder of the path should be`;
      this.known.set(at, 'real');
      [deepest, state] = [at, 'real'];
    }
    if (write && state === 'real') {
      if (!writable(deepest)) return `${deepest === this.root ? 'the output directory' : `${this.relativeOf(deepest)}/`} cannot be written (${unwritable(deepest)})`;
      this.known.set(deepest, 'writable');
    }
    if (!reached || state === 'made' || trusted || deepest !== dirname(full)) return null;
    const stat = lstatSync(full, { throwIfNoEntry: false });
    if (stat === undefined || stat.isFile()) return null;
    if (stat.isSymbolicLink()) return `a symbolic link (to ${readlinkSync(full)}) stands in the file's place: vidfeeds never writes through one`;
    return `a ${stat.isDirectory() ? 'directory' : 'special file'} stands in the file's place`;
  }

  /** Forgets what it knows: after a removal a remembered folder may be gone. */
  forget(): void {
    this.known.clear();
  }

  /** `full` (absolute, below the root) relative to the root. */
  private relativeOf(full: string): string {
    return full.slice(this.root === '/' ? 1 : this.root.length + 1);
  }

  /** Remembers as made the folders of `rel` from the one ending at `slash` down. */
  private rememberMade(rel: string, slash: number): void {
    for (let at = slash; at !== -1; at = rel.indexOf('/', at + 1)) this.known.set(inside(this.root, rel.slice(0, at)), 'made');
  }
}

/** `rel` (relative, `/`-separated, plain) inside `root` (absolute). */
function inside(root: string, rel: string): string {
  return root === '/' ? `/${rel}` : `${root}/${rel}`;
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Why a path cannot be written, in words, as the system says it. */
function unwritable(path: string): string {
  try {
    accessSync(path, constants.W_OK);
    return 'it could not be written';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'EPERM' ? 'EPERM: operation not permitted, an immutable folder or file' : code === 'EACCES' ? 'EACCES: permission denied' : String(code);
  }
}

/**
 * Puts whole files in place: writes each into the staging folder (same file system) and renames
 * it over its path, so a reader sees the old file or the new one, never a part. DirectoryWriter,
 * the write thread (write-worker.ts) and the benchmark's floor (src/bench/floor.ts) all place
 * files with it, so they make the same system calls.
 */
export class FilePlacer {
  readonly dirs: DirectoryMaker;
  private readonly staging: string;
  private counter = 0;

  /** `prefix` names the staging files of this placer apart from other placers' in the same folder. */
  constructor(root: string, private readonly prefix: string) {
    this.dirs = new DirectoryMaker(root);
    this.staging = join(root, STAGING_DIR);
  }

  /** Writes `body` to `full`, an absolute path inside the root (checked by the caller). */
  place(full: string, body: Uint8Array): void {
    this.dirs.ensure(dirname(full));
    const temp = `${this.staging}/${this.prefix}-${this.counter++}`;
    const fd = openSync(temp, 'w', 0o644);
    try {
      let offset = 0;
      while (offset < body.length) offset += writeSync(fd, body, offset, body.length - offset);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, full);
  }
}

/**
 * Writes into a directory. Every file is written beside (in the staging folder of the same file
 * system) and renamed into place, so a reader sees the old file or the new one, never a part.
 * A killed build leaves at most files in the staging folder, which the next build clears.
 */
export class DirectoryWriter implements OutputWriter {
  readonly root: string;
  private readonly staging: string;
  private readonly placer: FilePlacer;
  private readonly guard: PathGuard;

  constructor(root: string) {
    this.root = resolve(root);
    this.guard = new PathGuard(this.root);
    this.staging = join(this.root, STAGING_DIR);
    mkdirSync(this.root, { recursive: true });
    rmSync(this.staging, { recursive: true, force: true });
    mkdirSync(this.staging);
    this.placer = new FilePlacer(this.root, String(process.pid));
  }

  /** Resolves a relative output path, refusing anything that would land outside the root. */
  target(path: string): string {
    return resolveInside(this.root, path);
  }

  write(path: string, body: Buffer): void {
    const full = this.target(path);
    const problem = this.guard.problem(full, true);
    if (problem !== null) throw new Error(`${path}: ${problem}`);
    this.placer.place(full, body);
  }

  blocked(path: string): string | null {
    return this.guard.problem(this.target(path), true);
  }

  /** `write` for a path `target` has already resolved and checked. */
  writeResolved(full: string, body: Uint8Array): void {
    this.placer.place(full, body);
  }

  isEmpty(): boolean {
    return !holdsServedEntries(this.root);
  }

  size(path: string): number | null {
    try {
      const full = this.target(path);
      // A file reached through a link is not one vidfeeds wrote: the write that follows is refused.
      if (this.guard.problem(full, false) !== null) return null;
      const stat = lstatSync(full, { throwIfNoEntry: false });
      return stat?.isFile() ? stat.size : null;
    } catch {
      return null;
    }
  }

  holds(path: string, body: Buffer): boolean {
    return this.read(path, body.length)?.equals(body) ?? false;
  }

  read(path: string, size: number): Buffer | null {
    try {
      const full = this.target(path);
      if (this.guard.problem(full, false) !== null) return null;
      const stat = lstatSync(full, { throwIfNoEntry: false });
      if (stat === undefined || !stat.isFile() || stat.size !== size) return null;
      const bytes = readFileSync(full);
      return bytes.length === size ? bytes : null;
    } catch {
      return null;
    }
  }

  remove(path: string): boolean {
    const full = this.target(path);
    // Never through a link: what it points to is not vidfeeds's (`check` reports the link).
    if (this.guard.problem(full, false) !== null) return false;
    if (lstatSync(full, { throwIfNoEntry: false })?.isDirectory()) return false;
    try {
      unlinkSync(full);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
    this.placer.dirs.forget();
    this.guard.forget();
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

  removeFolder(path: string): boolean {
    const full = this.target(path);
    // Asked as for a file inside it: the folder itself and each one above it must be a real
    // folder, not a link (a folder in a file's place is what the guard reports otherwise).
    if (this.guard.problem(join(full, 'entry'), false) !== null) return false;
    if (!(lstatSync(full, { throwIfNoEntry: false })?.isDirectory() ?? false)) return false;
    try {
      rmdirSync(full);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT') return false;
      throw error;
    }
    this.placer.dirs.forget();
    this.guard.forget();
    return true;
  }

  /** Removes the staging folder; called when a build ends. */
  close(): void {
    rmSync(this.staging, { recursive: true, force: true });
  }
}

/** Keeps files in memory: for tests and for renderers' callers that want bytes, not files. */
export class MemoryWriter implements OutputWriter {
  readonly files = new Map<string, Buffer>();
  writes = 0;

  write(path: string, body: Buffer): void {
    if (path.split('/').some((part) => part === '..' || part === '.' || part === '') || path.startsWith('/')) {
      throw new Error(`refusing to write outside the output directory: ${quoted(path)}`);
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

  holds(path: string, body: Buffer): boolean {
    return this.files.get(path)?.equals(body) ?? false;
  }

  read(path: string, size: number): Buffer | null {
    const body = this.files.get(path);
    return body?.length === size ? body : null;
  }

  isEmpty(): boolean {
    return this.files.size === 0;
  }

  text(path: string): string {
    const body = this.files.get(path);
    if (body === undefined) throw new Error(`no file ${path}; have ${[...this.files.keys()].slice(0, 20).join(', ')}`);
    return body.toString('utf8');
  }
}

/**
 * Whether a folder of the tree holds anything a server would serve. No document is dot-named:
 * the staging folder and the build records (build-record.ts) do not count.
 */
export function holdsServedEntries(root: string): boolean {
  const dir = opendirSync(root);
  try {
    for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) if (!entry.name.startsWith('.')) return true;
    return false;
  } finally {
    dir.closeSync();
  }
}
