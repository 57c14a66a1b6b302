import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireBuildLock, defaultLockFile, LockHeldError, readLock, type LockHolder } from '../../src/pipeline/lock.js';
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
    expect(readLock(lock.file)?.holder?.pid).toBe(process.pid);
    lock.release();
  });

  it('does not recover a lock taken on another host, and says how to remove it', () => {
    const out = join(work(), 'out');
    const file = defaultLockFile(out);
    writeLock(file, { pid: deadPid(), host: 'elsewhere.example' });
    expect(() => acquireBuildLock(out)).toThrow(`if it no longer runs on elsewhere.example, remove ${file}`);
  });

  it('treats a lock whose process is alive as held, whatever it is', () => {
    const out = join(work(), 'out');
    writeLock(defaultLockFile(out), { pid: 4242 });
    expect(() => acquireBuildLock(out, { isAlive: (pid) => pid === 4242 })).toThrow(/pid 4242/);
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
