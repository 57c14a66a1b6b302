import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, realpathSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';

/**
 * One build at a time per output directory. The lock is a small JSON file beside the output
 * directory (`.vidfeeds/<out>.lock`, next to the build state; never in the served tree) naming its
 * holder. It is created whole and atomically (written aside, then hard-linked into place), so a
 * second build either gets it or reads who holds it.
 *
 * A lock whose holder is gone (same host, no process with that pid: a killed build) is recovered.
 * A lock taken on another host is never recovered automatically: we cannot know whether that
 * build is still running.
 */

export interface LockHolder {
  pid: number;
  host: string;
  /** ISO 8601 time the holder took the lock. */
  startedAt: string;
  /** What holds it, e.g. `vidfeeds build` or `vidfeeds watch`. */
  command: string;
  /** Random token, so a build removes only its own lock. */
  token: string;
}

/** Another build holds the lock of this output directory. Exit code 75 (try again later): the build did not run. */
export class LockHeldError extends VidfeedsError {
  constructor(
    readonly file: string,
    readonly out: string,
    readonly holder: LockHolder | null,
  ) {
    super(
      EXIT.tempfail,
      holder === null
        ? { what: `output directory ${out} is locked by ${file}, which is not a vidfeeds lock file`, hint: 'if no build is running, remove it' }
        : {
            what: `output directory ${out} is being built by another vidfeeds: ${describeHolder(holder)}`,
            hint: `wait for it to finish (--wait SECONDS)${holder.host === hostname() ? '' : `, or, if it no longer runs on ${holder.host}, remove ${file}`}`,
          },
    );
  }
}

export function describeHolder(holder: LockHolder): string {
  return `"${holder.command}", pid ${holder.pid} on ${holder.host}, started ${holder.startedAt}`;
}

export interface LockOptions {
  /** Lock file; by default `.vidfeeds/<out>.lock` beside the output directory. */
  file?: string;
  command?: string;
  /** Whether a process with this pid runs on this host (injected by tests). */
  isAlive?: (pid: number) => boolean;
  /** Called when a lock left by a dead build is taken over. */
  onRecovered?: (holder: LockHolder) => void;
  /** How long to wait for another build to release the lock before giving up; 0 (the default) gives up at once. */
  waitSeconds?: number;
}

/** How often a waiting build looks at the lock again. */
const WAIT_POLL_MS = 100;

export interface BuildLock {
  readonly file: string;
  readonly holder: LockHolder;
  /** Removes the lock if it is still this build's. Safe to call twice. */
  release(): void;
}

/** The lock file of an output directory; the same for every spelling of its path (symbolic links). */
export function defaultLockFile(outDir: string): string {
  const out = resolve(outDir);
  let parent = dirname(out);
  try {
    parent = realpathSync(parent);
  } catch {
    // The parent does not exist yet: nothing else can name it differently.
  }
  return join(parent, '.vidfeeds', `${basename(out)}.lock`);
}

export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function acquireBuildLock(outDir: string, options: LockOptions = {}): BuildLock {
  const deadline = Date.now() + (options.waitSeconds ?? 0) * 1000;
  for (;;) {
    try {
      return tryBuildLock(outDir, options);
    } catch (error) {
      // A lock that is not ours to judge (not a vidfeeds lock) is not waited for.
      if (!(error instanceof LockHeldError) || error.holder === null || Date.now() >= deadline) throw error;
      sleep(Math.min(WAIT_POLL_MS, Math.max(1, deadline - Date.now())));
    }
  }
}

/** Blocks the thread: the build is synchronous, and nothing else runs while it waits. */
function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function tryBuildLock(outDir: string, options: LockOptions): BuildLock {
  const out = resolve(outDir);
  const file = options.file ?? defaultLockFile(out);
  const isAlive = options.isAlive ?? processIsAlive;
  const holder: LockHolder = {
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    command: options.command ?? 'vidfeeds build',
    token: randomBytes(12).toString('hex'),
  };
  mkdirSync(dirname(file), { recursive: true });
  const text = `${JSON.stringify(holder)}\n`;
  const aside = `${file}.${holder.token}`;

  for (let attempt = 0; attempt < 5; attempt++) {
    writeFileSync(aside, text, { mode: 0o644 });
    try {
      linkSync(aside, file);
      return lockHandle(file, holder);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      unlinkSync(aside);
    }
    const found = readLock(file);
    if (found === undefined) continue; // released meanwhile: try again
    if (found.holder === null || found.holder.host !== holder.host || isAlive(found.holder.pid)) {
      throw new LockHeldError(file, out, found.holder);
    }
    // Its holder is dead. Move the file aside first, so that of two builds recovering it at once
    // only one takes it, and check that what was moved is the lock judged stale, not a new one.
    const moved = `${file}.stale-${holder.token}`;
    try {
      renameSync(file, moved);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    const movedText = safeRead(moved);
    if (movedText !== found.text) {
      // Another build recovered it and took it in between: give it back.
      try {
        linkSync(moved, file);
      } catch {
        // A third one holds it now; the next attempt reports it.
      }
    } else {
      options.onRecovered?.(found.holder);
    }
    unlinkSync(moved);
  }
  const last = readLock(file);
  throw new LockHeldError(file, out, last?.holder ?? null);
}

function lockHandle(file: string, holder: LockHolder): BuildLock {
  let released = false;
  return {
    file,
    holder,
    release() {
      if (released) return;
      released = true;
      const found = readLock(file);
      if (found?.holder?.token === holder.token) unlinkSync(file);
    },
  };
}

function safeRead(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The lock's holder (null when the file is not a lock), or undefined when there is no lock. */
export function readLock(file: string): { text: string; holder: LockHolder | null } | undefined {
  const text = safeRead(file);
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (typeof value.pid === 'number' && typeof value.host === 'string' && typeof value.token === 'string') {
      return { text, holder: value as LockHolder };
    }
  } catch {
    // fall through: not ours
  }
  return { text, holder: null };
}
