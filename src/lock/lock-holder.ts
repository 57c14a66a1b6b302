import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * Whether the build named in a lock file can still be running. A lock is taken over only when the
 * answer is a proof that it cannot: a guess either way freezes the site (a lock never recovered)
 * or lets two builds write one tree.
 *
 * - On this host, during this boot: the pid names no process, or a process other than the holder.
 *   A process is named exactly by the kernel's boot id and its start time in clock ticks since
 *   boot (/proc/PID/stat, field 22): two processes of one boot that share a pid started at
 *   different ticks, however soon the pid is reused, and the count does not move with the wall
 *   clock (NTP steps, a clock set by hand).
 * - On this host, after a reboot (the kernel's boot id differs): every process of the old boot is
 *   gone.
 * - On another host (a container that was replaced, a shared file system): the holder renews the
 *   lock file's modification time every `LEASE_RENEW_SECONDS`; a lock not renewed for
 *   `LEASE_EXPIRY_SECONDS` is gone. Its clock and ours must agree within that margin (NTP).
 *
 * Without /proc (macOS, the BSDs) neither the boot id nor the start ticks can be read: a lock of
 * this host is gone only when no process has its pid, and one whose pid was reused is held until
 * it is removed by hand (past `maxLockAgeSeconds` it is reported as a STALE LOCK naming the file).
 * A lock written by a vidfeeds that recorded no start ticks is judged the same way.
 */

/** How often a holder renews its lease. */
export const LEASE_RENEW_SECONDS = 30;
/** A lease not renewed for this long is expired: ten renewals missed. */
export const LEASE_EXPIRY_SECONDS = 300;

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
  /** When the holding process started, in clock ticks since boot (Linux), so a reused pid is known. */
  startTicks?: number;
  /** The holder renews the lock file's time every this many seconds (a lease). */
  leaseSeconds?: number;
}

/** What the host can tell about its processes; injected by tests. */
export interface HostFacts {
  host: string;
  bootId: string | null;
  /** Whether a process with this pid exists here. */
  isAlive(pid: number): boolean;
  /** When the process with this pid started, in clock ticks since boot, or null when it cannot be told. */
  startTicks(pid: number): number | null;
  now(): number;
}

export type Liveness = { gone: false } | { gone: true; why: string };

/** Judges a lock found on disk; `modifiedMs` is the lock file's modification time (its lease). */
export function judgeHolder(holder: LockHolder, modifiedMs: number, facts: HostFacts): Liveness {
  if (holder.host === facts.host) {
    const sameBoot = holder.bootId !== undefined && facts.bootId !== null;
    if (sameBoot && holder.bootId !== facts.bootId) {
      return { gone: true, why: `this host has restarted since the lock was taken (boot id ${holder.bootId})` };
    }
    if (!facts.isAlive(holder.pid)) return { gone: true, why: `no process ${holder.pid} runs on ${facts.host}` };
    const ticks = sameBoot && holder.startTicks !== undefined ? facts.startTicks(holder.pid) : null;
    if (ticks !== null && ticks !== holder.startTicks) {
      return {
        gone: true,
        why: `process ${holder.pid} on ${facts.host} started at tick ${ticks} of this boot, the holder at tick ${holder.startTicks}: another process has its pid`,
      };
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

/**
 * When a process started, in clock ticks since boot (/proc/PID/stat, field 22; Linux), or null
 * when it cannot be told. Ticks, not a time: the count is the kernel's own and exact.
 */
export function processStartTicks(pid: number): number | null {
  const stat = readProc(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last
  // ')', so field 3 is the first of them and field 22 the twentieth.
  const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  return Number.isSafeInteger(ticks) ? ticks : null;
}

/** The facts of the machine this runs on. */
export function thisHost(): HostFacts {
  return { host: hostname(), bootId: bootId(), isAlive: processIsAlive, startTicks: processStartTicks, now: () => Date.now() };
}
