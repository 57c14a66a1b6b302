import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * Whether the build named in a lock file can still be running. A lock is taken over only when the
 * answer is a proof that it cannot: a guess either way freezes the site (a lock never recovered)
 * or lets two builds write one tree.
 *
 * - On this host, during this boot: the pid names no process, or a process that started after the
 *   lock was taken (the pid was reused).
 * - On this host, after a reboot (the kernel's boot id differs): every process of the old boot is
 *   gone.
 * - On another host (a container that was replaced, a shared file system): the holder renews the
 *   lock file's modification time every `LEASE_RENEW_SECONDS`; a lock not renewed for
 *   `LEASE_EXPIRY_SECONDS` is gone. Its clock and ours must agree within that margin (NTP).
 */

/** How often a holder renews its lease. */
export const LEASE_RENEW_SECONDS = 30;
/** A lease not renewed for this long is expired: ten renewals missed. */
export const LEASE_EXPIRY_SECONDS = 300;
/**
 * How far apart two readings of one process's start time may be: /proc gives it from the boot
 * time, which moves when the clock is stepped (NTP).
 */
const START_SLACK_MS = 10_000;

export interface LockHolder {
  pid: number;
  host: string;
  /** ISO 8601 time the holder took the lock. */
  startedAt: string;
  /** What holds it, e.g. `vidfeeds build` or `vidfeeds watch`. */
  command: string;
  /** Random token, so a build removes only its own lock. */
  token: string;
  /** The kernel's boot id when the lock was taken (Linux), so a lock from before a reboot is known. */
  bootId?: string;
  /** When the holding process started (ms since the epoch), so a reused pid is known. */
  processStart?: number;
  /** The holder renews the lock file's time every this many seconds (a lease). */
  leaseSeconds?: number;
}

/** What the host can tell about its processes; injected by tests. */
export interface HostFacts {
  host: string;
  bootId: string | null;
  /** Whether a process with this pid exists here. */
  isAlive(pid: number): boolean;
  /** When the process with this pid started (ms since the epoch), or null when it cannot be told. */
  processStart(pid: number): number | null;
  now(): number;
}

export type Liveness = { gone: false } | { gone: true; why: string };

/** Judges a lock found on disk; `modifiedMs` is the lock file's modification time (its lease). */
export function judgeHolder(holder: LockHolder, modifiedMs: number, facts: HostFacts): Liveness {
  const taken = Date.parse(holder.startedAt);
  if (holder.host === facts.host) {
    if (holder.bootId !== undefined && facts.bootId !== null && holder.bootId !== facts.bootId) {
      return { gone: true, why: `this host has restarted since the lock was taken (boot id ${holder.bootId})` };
    }
    if (!facts.isAlive(holder.pid)) return { gone: true, why: `no process ${holder.pid} runs on ${facts.host}` };
    const started = facts.processStart(holder.pid);
    if (started !== null) {
      const reused =
        holder.processStart !== undefined ? Math.abs(started - holder.processStart) > START_SLACK_MS : Number.isFinite(taken) && started > taken + START_SLACK_MS;
      if (reused) return { gone: true, why: `process ${holder.pid} on ${facts.host} started at ${new Date(started).toISOString()}: another process has its pid` };
    }
    return { gone: false };
  }
  if (holder.leaseSeconds !== undefined) {
    const silent = (facts.now() - modifiedMs) / 1000;
    if (silent > LEASE_EXPIRY_SECONDS) {
      return { gone: true, why: `its holder on ${holder.host} has not renewed it for ${Math.round(silent)} s (it renews every ${holder.leaseSeconds} s)` };
    }
  }
  return { gone: false };
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

function readProc(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** The Linux kernel's boot id, or null elsewhere. */
export function bootId(): string | null {
  return readProc('/proc/sys/kernel/random/boot_id')?.trim() ?? null;
}

/** Clock ticks per second of /proc's times (USER_HZ, 100 on every Linux architecture Node runs on). */
const USER_HZ = 100;
let bootTimeMs: number | null | undefined;

/** When a process started (ms since the epoch) from /proc (Linux), or null when it cannot be told. */
export function processStartTime(pid: number): number | null {
  if (bootTimeMs === undefined) {
    const btime = /^btime (\d+)$/m.exec(readProc('/proc/stat') ?? '');
    bootTimeMs = btime === null ? null : Number(btime[1]) * 1000;
  }
  const stat = readProc(`/proc/${pid}/stat`);
  if (bootTimeMs === null || stat === null) return null;
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[19]);
  return Number.isFinite(ticks) ? bootTimeMs + (ticks * 1000) / USER_HZ : null;
}

/** The facts of the machine this runs on. */
export function thisHost(): HostFacts {
  return { host: hostname(), bootId: bootId(), isAlive: processIsAlive, processStart: processStartTime, now: () => Date.now() };
}
