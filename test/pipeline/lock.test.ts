import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { setTimeout as wait } from 'node:timers/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireBuildLock, defaultLockFile, LockHeldError, onLockReleased, readLock, type LockHolder } from '../../src/lock/lock.js';
import { bootId, LEASE_EXPIRY_SECONDS, processStartTicks } from '../../src/lock/lock-holder.js';
import { renewingLease, runSteps } from '../../src/pipeline/build-steps.js';
import { cli } from '../helpers/cli.js';
import { buildSite } from '../../src/pipeline/site-build.js';
import { createTestDb, insertUser, testConfig } from '../helpers/site-fixture.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';

function work() {
  const t = tempDir('vidfeeds-lock-');
  return t.dir;
}

/** The pid of a process that has exited: no process has it now (until the system reuses it). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function writeLock(file: string, holder: Partial<LockHolder>): void {
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, JSON.stringify({ pid: 1, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z', command: 'vidfeeds build', token: 't', ...holder }));
}

describe('build lock', () => {
  it('stops a second build on the same output directory, naming the holder', () => {
    const out = join(work(), 'out');
    const first = acquireBuildLock(out, { command: 'vidfeeds watch' });
    let error: unknown;
    try {
      acquireBuildLock(out);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LockHeldError);
    const message = (error as Error).message;
    expect(message).toContain(`output directory ${out} is being built by another vidfeeds`);
    expect(message).toContain(`pid ${process.pid} on ${hostname()}`);
    expect(message).toContain(`started ${first.holder.startedAt}`);
    expect(message).toContain('"vidfeeds watch"');
    first.release();
    const second = acquireBuildLock(out);
    second.release();
    expect(existsSync(first.file)).toBe(false);
  });

  it('keeps the lock beside the output directory, not in what is served', () => {
    const dir = work();
    const lock = acquireBuildLock(join(dir, 'out'));
    cleanUpAfterTest(() => lock.release());
    expect(lock.file).toBe(join(dir, '.vidfeeds', 'out.lock'));
    expect(defaultLockFile(join(dir, 'x', '..', 'out'))).toBe(lock.file);
  });

  it('recovers a lock left by a killed build on this host', () => {
    const out = join(work(), 'out');
    const pid = deadPid();
    writeLock(defaultLockFile(out), { pid, token: 'dead' });
    const recovered: LockHolder[] = [];
    const lock = acquireBuildLock(out, { onRecovered: (holder) => recovered.push(holder) });
    expect(recovered.map((h) => h.pid)).toEqual([pid]);
    expect(readLock(lock.file)?.holder?.bootId).toBe(bootId() ?? undefined);
    expect(readLock(lock.file)?.holder?.pid).toBe(process.pid);
    lock.release();
  });

  it('does not recover a lock taken on another host, and says how to remove it', () => {
    const out = join(work(), 'out');
    const file = defaultLockFile(out);
    writeLock(file, { pid: deadPid(), host: 'elsewhere.example', startedAt: new Date().toISOString() });
    expect(() => acquireBuildLock(out)).toThrow(`if it no longer runs on elsewhere.example, remove ${file}`);
  });

  it('treats a lock whose process is alive as held, whatever it is', () => {
    const out = join(work(), 'out');
    writeLock(defaultLockFile(out), { pid: 4242, startedAt: new Date().toISOString() });
    expect(() => acquireBuildLock(out, { host: { isAlive: (pid) => pid === 4242, startTicks: () => null } })).toThrow(/pid 4242/);
  });

  it('refuses a lock file it cannot read as a lock, rather than guessing', () => {
    const out = join(work(), 'out');
    const file = defaultLockFile(out);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, 'garbage');
    expect(() => acquireBuildLock(out)).toThrow(`is locked by ${file}, which is not a vidfeeds lock file`);
  });

  it('releases only its own lock', () => {
    const out = join(work(), 'out');
    const lock = acquireBuildLock(out);
    // Someone removed it by hand and another build took it.
    writeLock(lock.file, { pid: process.pid, token: 'someone-else' });
    lock.release();
    expect(readLock(lock.file)?.holder?.token).toBe('someone-else');
  });

  it('tells its listeners of each lock it releases, once, and not of one it no longer holds', () => {
    const heard: string[] = [];
    const stop = onLockReleased((file) => heard.push(file));
    cleanUpAfterTest(stop);
    const mine = acquireBuildLock(join(work(), 'out'));
    mine.release();
    mine.release();
    const taken = acquireBuildLock(join(work(), 'out'));
    writeLock(taken.file, { pid: process.pid, token: 'someone-else' });
    taken.release();
    expect(heard).toEqual([mine.file]);
    stop();
    acquireBuildLock(join(work(), 'out')).release();
    expect(heard).toEqual([mine.file]);
  });

  it('a build that finds the lock held stops before touching the output directory', () => {
    const { db, file } = createTestDb();
    insertUser(db, { username: 'alice' });
    const out = join(work(), 'out');
    const held = acquireBuildLock(out);
    cleanUpAfterTest(() => held.release());
    expect(() => buildSite({ db: file, out, config: testConfig() })).toThrow(LockHeldError);
    expect(existsSync(out)).toBe(false);
    held.release();
    expect(buildSite({ db: file, out, config: testConfig() }).documents).toBeGreaterThan(0);
    expect(existsSync(held.file)).toBe(false);
  });
});

/** A process that runs (a `sleep`), started now: its pid is alive, and is not a build's. */
function liveUnrelatedPid(): number {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  cleanUpAfterTest(() => child.kill());
  return child.pid!;
}

const HOUR = 3600_000;

describe('a lock whose holder is provably gone is recovered; one that may run is not', () => {
  it('recovers a lock whose pid now belongs to a process that started at another tick of this boot, however close', () => {
    const out = join(work(), 'out');
    const pid = liveUnrelatedPid();
    const ticks = processStartTicks(pid)!;
    expect(Number.isSafeInteger(ticks)).toBe(true);
    // One tick (10 ms) before the process with the pid now: the holder was another process.
    writeLock(defaultLockFile(out), { pid, startedAt: new Date().toISOString(), bootId: bootId()!, startTicks: ticks - 1, token: 'old' });
    const why: string[] = [];
    const lock = acquireBuildLock(out, { onRecovered: (_holder, reason) => why.push(reason), leaseSeconds: 0 });
    expect(why).toEqual([`process ${pid} on ${hostname()} started at tick ${ticks} of this boot, the holder at tick ${ticks - 1}: another process has its pid`]);
    lock.release();
    // The very process that took it holds it, whatever the wall clock says.
    writeLock(defaultLockFile(out), { pid, startedAt: '2001-01-01T00:00:00.000Z', bootId: bootId()!, startTicks: ticks, token: 'same' });
    expect(() => acquireBuildLock(out, { leaseSeconds: 0 })).toThrow(new RegExp(`pid ${pid} on`));
    // A lock that records no start ticks (an earlier vidfeeds, a host without /proc) whose pid
    // runs is held: nothing proves that its holder is gone.
    writeLock(defaultLockFile(out), { pid, startedAt: '2001-01-01T00:00:00.000Z', bootId: bootId()!, token: 'older' });
    expect(() => acquireBuildLock(out, { leaseSeconds: 0 })).toThrow(LockHeldError);
  });

  it('without /proc (no boot id, no start ticks), recovers a lock whose pid names no process and keeps one whose pid runs', () => {
    const out = join(work(), 'out');
    const noProc = { bootId: null, startTicks: () => null };
    writeLock(defaultLockFile(out), { pid: deadPid(), token: 'dead' });
    acquireBuildLock(out, { host: noProc, leaseSeconds: 0 }).release();
    writeLock(defaultLockFile(out), { pid: liveUnrelatedPid(), bootId: bootId()!, startTicks: 1, token: 'live' });
    expect(() => acquireBuildLock(out, { host: noProc, leaseSeconds: 0 })).toThrow(LockHeldError);
  });

  it('keeps a lock whose pid is the very process that took it, however old, and reports it loudly past the limit', () => {
    const out = join(work(), 'out');
    const file = defaultLockFile(out);
    writeLock(file, { pid: process.pid, startedAt: new Date(Date.now() - 7 * HOUR).toISOString(), bootId: bootId()!, startTicks: processStartTicks(process.pid)! });
    let error: LockHeldError | undefined;
    try {
      acquireBuildLock(out, { maxAgeSeconds: 6 * 3600, leaseSeconds: 0 });
    } catch (e) {
      error = e as LockHeldError;
    }
    expect(error).toBeInstanceOf(LockHeldError);
    expect(error!.overAge).toBe(true);
    expect(error!.message).toMatch(new RegExp(`^STALE LOCK: output directory ${out} has been locked for 7 h, longer than the limit of 6 h`));
    expect(error!.message).toContain(`remove ${file}`);
    // Under the limit: the ordinary message.
    expect(() => acquireBuildLock(out, { maxAgeSeconds: 8 * 3600, leaseSeconds: 0 })).toThrow(/is being built by another vidfeeds/);
  });

  it('recovers a lock taken on this host before it restarted (another boot id), even if its pid runs now', () => {
    const out = join(work(), 'out');
    writeLock(defaultLockFile(out), { pid: process.pid, startedAt: new Date().toISOString(), bootId: 'a-boot-before' });
    const why: string[] = [];
    acquireBuildLock(out, { host: { bootId: 'this-boot' }, onRecovered: (_h, reason) => why.push(reason), leaseSeconds: 0 }).release();
    expect(why).toEqual(['this host has restarted since the lock was taken (boot id a-boot-before)']);
  });

  it('recovers a lock of another host (a replaced container) whose lease ran out, and not one whose lease is renewed', () => {
    const out = join(work(), 'out');
    const file = defaultLockFile(out);
    writeLock(file, { pid: process.pid, host: 'old-container', startedAt: new Date(Date.now() - HOUR).toISOString(), leaseSeconds: 30 });
    expect(() => acquireBuildLock(out, { leaseSeconds: 0 })).toThrow(/pid \d+ on old-container/);
    const silent = new Date(Date.now() - (LEASE_EXPIRY_SECONDS + 60) * 1000);
    utimesSync(file, silent, silent);
    const why: string[] = [];
    acquireBuildLock(out, { onRecovered: (_h, reason) => why.push(reason), leaseSeconds: 0 }).release();
    expect(why).toEqual([expect.stringMatching(/^its holder on old-container has not renewed it for \d+ s \(it renews every 30 s\)$/)]);
    // A lock without a lease (another host, an earlier vidfeeds) is never taken over.
    writeLock(file, { pid: process.pid, host: 'old-container', startedAt: new Date(Date.now() - HOUR).toISOString() });
    utimesSync(file, silent, silent);
    expect(() => acquireBuildLock(out, { leaseSeconds: 0 })).toThrow(LockHeldError);
  });

  it('renews its own lease while it holds the lock, when the event loop turns', async () => {
    const out = join(work(), 'out');
    const lock = acquireBuildLock(out, { leaseSeconds: 0.05 });
    cleanUpAfterTest(() => lock.release());
    const old = new Date(Date.now() - HOUR);
    utimesSync(lock.file, old, old);
    await wait(500);
    expect(Date.now() - statSync(lock.file).mtimeMs).toBeLessThan(HOUR / 2);
  });

  it('renews it on its own thread, starting none, and where a synchronous build yields between owners', () => {
    const out = join(work(), 'out');
    const threads = () => readdirSync('/proc/self/task').length;
    const before = threads();
    const lock = acquireBuildLock(out, { leaseSeconds: 0.05 });
    cleanUpAfterTest(() => lock.release());
    expect(threads()).toBe(before);
    const old = new Date(Date.now() - HOUR);
    utimesSync(lock.file, old, old);
    // A build that never lets the event loop turn, yielding between owners as builds do.
    function* owners(): Generator<void, number> {
      const end = Date.now() + 300;
      let count = 0;
      while (Date.now() < end) {
        count++;
        yield;
      }
      return count;
    }
    expect(runSteps(renewingLease(owners(), () => lock.renew()))).toBeGreaterThan(0);
    expect(Date.now() - statSync(lock.file).mtimeMs).toBeLessThan(HOUR / 2);
    // Not renewed once released, nor before it is due.
    lock.release();
    writeLock(lock.file, { pid: process.pid, token: lock.holder.token });
    utimesSync(lock.file, old, old);
    lock.renew();
    expect(Math.round(statSync(lock.file).mtimeMs)).toBe(old.getTime());
  });

  it('runs the clean-up of steps their driver stops early', () => {
    const cleaned: string[] = [];
    function* steps(): Generator<void, void> {
      try {
        yield;
        yield;
      } finally {
        cleaned.push('steps');
      }
    }
    const renewing = renewingLease(steps(), () => undefined);
    renewing.next();
    renewing.return();
    expect(cleaned).toEqual(['steps']);
  });

  it('vidfeeds build takes over a lock of a live unrelated pid and one of another host name, and says so', () => {
    const { db, file, cleanup } = createTestDb();
    cleanUpAfterTest(cleanup);
    insertUser(db, { username: 'alice' });
    const dir = work();
    const out = join(dir, 'out');
    const lockFile = defaultLockFile(out);
    const taken = Date.now() - HOUR;
    const unrelated = liveUnrelatedPid();
    writeLock(lockFile, { pid: unrelated, startedAt: new Date(taken).toISOString(), startTicks: processStartTicks(unrelated)! - 100, bootId: bootId()! });
    const first = cli(['build', '--db', file, '--out', out]);
    expect(first.stderr).toMatch(/took over the lock of a build that is gone \("vidfeeds build", pid \d+ .*\): process \d+ .* another process has its pid/);
    expect(first.code).toBe(0);
    writeLock(lockFile, { pid: process.pid, host: 'container-1234', startedAt: new Date(taken).toISOString(), leaseSeconds: 30 });
    const silent = new Date(taken);
    utimesSync(lockFile, silent, silent);
    const second = cli(['build', '--db', file, '--out', out]);
    expect(second.stderr).toContain('its holder on container-1234 has not renewed it');
    expect(second.code).toBe(0);
    expect(existsSync(lockFile)).toBe(false);
  });
});
