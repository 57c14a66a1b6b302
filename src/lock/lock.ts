import { randomBytes } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import { linkSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';
import { judgeHolder, LEASE_RENEW_SECONDS, thisHost, type HostFacts, type LockHolder } from './lock-holder.js';

export { processIsAlive, type LockHolder } from './lock-holder.js';

/**
 * One build at a time per output directory. The lock is a small JSON file beside the output
 * directory (`.vidfeeds/<out>.lock`, next to the build state; never in the served tree) naming its
 * holder. It is created whole and atomically (written aside, then hard-linked into place), so a
 * second build either gets it or reads who holds it.
 *
 * A lock is recovered only when its holder is provably gone (src/lock/lock-holder.ts): on this
 * host, no process with its pid, or one that started at another clock tick of this boot (the pid
 * was reused), or the machine has booted since (another boot id); on another host
 * (a container that was replaced, a shared file system), a lease the holder no longer renews. A
 * lock older than a limit (`maxAgeSeconds`) that is still held is reported loudly: a build may be
 * hung.
 */

/** Another build holds the lock of this output directory. Exit code 75 (try again later): the build did not run. */
export class LockHeldError extends VidfeedsError {
  /** The lock is older than the limit (`maxAgeSeconds`): its build may be hung. */
  readonly overAge: boolean;

  constructor(
    readonly file: string,
    readonly out: string,
    readonly holder: LockHolder | null,
    options: { ageSeconds?: number; maxAgeSeconds?: number; host?: string } = {},
  ) {
    const { ageSeconds, maxAgeSeconds } = options;
    const overAge = holder !== null && ageSeconds !== undefined && maxAgeSeconds !== undefined && ageSeconds > maxAgeSeconds;
    const elsewhere = holder !== null && holder.host !== (options.host ?? holder.host);
    super(
      EXIT.tempfail,
      holder === null
        ? { what: `output directory ${out} is locked by ${file}, which is not a vidfeeds lock file`, hint: 'if no build is running, remove it' }
        : overAge
          ? {
              what:
                `STALE LOCK: output directory ${out} has been locked for ${duration(ageSeconds)}, longer than the limit of ` +
                `${duration(maxAgeSeconds)} (maxLockAgeSeconds), by ${describeHolder(holder)}: no build has published since`,
              hint: `if that build is hung, stop it; if it no longer runs${elsewhere ? ` on ${holder.host}` : ''}, remove ${file}`,
            }
          : {
              what: `output directory ${out} is being built by another vidfeeds: ${describeHolder(holder)}`,
              hint: `wait for it to finish (--wait SECONDS)${elsewhere ? `, or, if it no longer runs on ${holder.host}, remove ${file}` : ''}`,
            },
    );
    this.overAge = overAge;
  }
}

/** "3 h 20 min", "12 min", "40 s". */
function duration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h${minutes % 60 === 0 ? '' : ` ${minutes % 60} min`}`;
}

export function describeHolder(holder: LockHolder): string {
  return `"${holder.command}", pid ${holder.pid} on ${holder.host}, started ${holder.startedAt}`;
}

export interface LockOptions {
  /** Lock file; by default `.vidfeeds/<out>.lock` beside the output directory. */
  file?: string;
  command?: string;
  /** What this host can tell about its processes (injected by tests). */
  host?: Partial<HostFacts>;
  /** Called when a lock left by a build that is gone is taken over, with why it is known to be gone. */
  onRecovered?: (holder: LockHolder, why: string) => void;
  /** A lock held longer than this is reported as stale (LockHeldError.overAge); by default six hours. */
  maxAgeSeconds?: number;
  /** How often the holder renews its lease (LEASE_RENEW_SECONDS); 0 holds no lease (tests). */
  leaseSeconds?: number;
  /** Whether its release is told to `onLockReleased`'s listeners (by default; not a deploy record's lock, which no build waits for). */
  announced?: boolean;
}

/** A build that holds its lock this long is probably hung: the default of `maxAgeSeconds`. */
export const DEFAULT_MAX_LOCK_AGE_SECONDS = 6 * 3600;

/** How often a waiting build looks at the lock again. */
const WAIT_POLL_MS = 100;

export interface BuildLock {
  readonly file: string;
  readonly holder: LockHolder;
  /** Renews the lease if it is due (cheap otherwise): called between a build's owners. */
  renew(): void;
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

/** Takes the lock of an output directory at once, or throws LockHeldError naming who holds it. */
export function acquireBuildLock(outDir: string, options: LockOptions = {}): BuildLock {
  return tryBuildLock(outDir, options);
}

export interface LockWait {
  /** How long to wait for another build to release the lock before giving up (LockHeldError). */
  seconds: number;
  /** Asked at every look: an error returned (a signal heard, say) ends the wait and is thrown. */
  stop?: () => Error | null;
  /** Called once, when the lock is found held and the wait begins. */
  waiting?: (held: LockHeldError) => void;
}

/**
 * Takes the lock, waiting up to `wait.seconds` for another build to release it. It waits on
 * timers, so the event loop turns while it does: a signal's handler runs at once, and the wait
 * ends at the next look (`wait.stop`).
 */
export async function waitForBuildLock(outDir: string, options: LockOptions, wait: LockWait): Promise<BuildLock> {
  const deadline = Date.now() + wait.seconds * 1000;
  let told = false;
  for (;;) {
    const stop = wait.stop?.() ?? null;
    if (stop !== null) throw stop;
    try {
      return tryBuildLock(outDir, options);
    } catch (error) {
      // A lock that is not ours to judge (not a vidfeeds lock) is not waited for.
      if (!(error instanceof LockHeldError) || error.holder === null || Date.now() >= deadline) throw error;
      if (!told) wait.waiting?.(error);
      told = true;
      await pause(Math.min(WAIT_POLL_MS, Math.max(1, deadline - Date.now())));
    }
  }
}

function tryBuildLock(outDir: string, options: LockOptions): BuildLock {
  const out = resolve(outDir);
  const file = options.file ?? defaultLockFile(out);
  const facts: HostFacts = { ...thisHost(), ...options.host };
  const leaseSeconds = options.leaseSeconds ?? LEASE_RENEW_SECONDS;
  const holder: LockHolder = {
    pid: process.pid,
    host: facts.host,
    startedAt: new Date(facts.now()).toISOString(),
    command: options.command ?? 'vidfeeds build',
    token: randomBytes(12).toString('hex'),
    ...(facts.bootId === null ? {} : { bootId: facts.bootId }),
    ...optional('startTicks', facts.startTicks(process.pid)),
    ...(leaseSeconds > 0 ? { leaseSeconds } : {}),
  };
  mkdirSync(dirname(file), { recursive: true });
  const text = `${JSON.stringify(holder)}\n`;
  const aside = `${file}.${holder.token}`;

  for (let attempt = 0; attempt < 5; attempt++) {
    writeFileSync(aside, text, { mode: 0o644 });
    try {
      linkSync(aside, file);
      return lockHandle(file, holder, options.announced ?? true);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      unlinkSync(aside);
    }
    const found = readLock(file);
    if (found === undefined) continue; // released meanwhile: try again
    const judged = found.holder === null ? { gone: false as const } : judgeHolder(found.holder, found.modifiedMs, facts);
    if (!judged.gone) {
      const taken = found.holder === null ? NaN : Date.parse(found.holder.startedAt);
      const ageSeconds = Number.isFinite(taken) ? (facts.now() - taken) / 1000 : undefined;
      throw new LockHeldError(file, out, found.holder, { ageSeconds, maxAgeSeconds: options.maxAgeSeconds ?? DEFAULT_MAX_LOCK_AGE_SECONDS, host: facts.host });
    }
    // Its holder is gone. Move the file aside first, so that of two builds recovering it at once
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
      options.onRecovered?.(found.holder!, judged.why);
    }
    unlinkSync(moved);
  }
  const last = readLock(file);
  throw new LockHeldError(file, out, last?.holder ?? null);
}

function optional<K extends string>(key: K, value: number | null): Partial<Record<K, number>> {
  return value === null ? {} : ({ [key]: value } as Record<K, number>);
}

/**
 * The lease (the lock file's modification time) is renewed on the thread that holds the lock:
 *
 * - by the build, each time it yields between two owners (`renew()`, build-steps.ts's
 *   `renewingLease`): a synchronous build never lets a timer fire, but it yields every few
 *   milliseconds;
 * - by a timer when the event loop turns, for holders that wait on input and output between their
 *   steps (sync, deploy, a build run by the yielding driver).
 *
 * This is safe as long as no holder runs longer than the lease's margin without yielding or
 * letting the loop turn: LEASE_EXPIRY_SECONDS less LEASE_RENEW_SECONDS, four and a half minutes.
 * A build's longest stretches without a yield are one owner's documents, the site files rendered
 * whole and the state's commit; docs/performance.md ("The lease") says how long they take at the
 * largest sizes measured, a small part of that margin. Only a holder on another host is judged by
 * its lease: on this one the pid and start ticks name it.
 */
const releaseListeners = new Set<(file: string) => void>();

/**
 * Hears every lock this process releases, as it is released (`vidfeeds watch --deploy`'s deploy
 * process tells the watch, whose build may be waiting for it: src/cli/deploy-worker.ts). Returns
 * the function that stops it.
 */
export function onLockReleased(listener: (file: string) => void): () => void {
  releaseListeners.add(listener);
  return () => releaseListeners.delete(listener);
}

function lockHandle(file: string, holder: LockHolder, announced: boolean): BuildLock {
  let released = false;
  const ms = (holder.leaseSeconds ?? 0) * 1000;
  let renewed = Date.now();
  const touch = () => {
    renewed = Date.now();
    try {
      if (readFileSync(file, 'utf8').includes(holder.token)) utimesSync(file, new Date(renewed), new Date(renewed));
    } catch {
      // Removed by hand, or the disk failed: the next renewal tries again, and release() reports nothing.
    }
  };
  const timer = ms > 0 ? setInterval(touch, ms) : null;
  // The lease never keeps a process alive that has nothing else to do.
  timer?.unref();
  return {
    file,
    holder,
    renew() {
      if (!released && ms > 0 && Date.now() - renewed >= ms) touch();
    },
    release() {
      if (released) return;
      released = true;
      if (timer !== null) clearInterval(timer);
      const found = readLock(file);
      if (found?.holder?.token !== holder.token) return;
      unlinkSync(file);
      if (announced) for (const listener of releaseListeners) listener(file);
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
export function readLock(file: string): { text: string; holder: LockHolder | null; modifiedMs: number } | undefined {
  const text = safeRead(file);
  if (text === undefined) return undefined;
  let modifiedMs = 0;
  try {
    modifiedMs = statSync(file).mtimeMs;
  } catch {
    // Removed since it was read: judged by its text alone.
  }
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (typeof value.pid === 'number' && typeof value.host === 'string' && typeof value.token === 'string') {
      return { text, holder: value as LockHolder, modifiedMs };
    }
  } catch {
    // fall through: not ours
  }
  return { text, holder: null, modifiedMs };
}

/** The holder of the lock file when it is a vidfeeds lock whose build may still run, else null. */
export function runningHolder(file: string, host: Partial<HostFacts> = {}): LockHolder | null {
  const found = readLock(file);
  if (found?.holder === null || found === undefined) return null;
  return judgeHolder(found.holder, found.modifiedMs, { ...thisHost(), ...host }).gone ? null : found.holder;
}
