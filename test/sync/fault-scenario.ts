import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { expect } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { syncSite, type SyncSite } from './sync-scenario.js';

/**
 * What the fault tests of both servers share: a sync run as its own process while the test breaks
 * its source (kills the connection, freezes or restarts the server), and the proof that it wrote
 * nothing: vidfeeds's database file, and its write-ahead log if any, byte for byte as before.
 */

/** The read timeout the fault tests configure (sync.readTimeoutSeconds). */
export const READ_TIMEOUT_SECONDS = 2;

/** The configuration block of a site whose only mapping is `users`. */
export function usersOnly(users: string): string {
  return JSON.stringify({ sync: { readTimeoutSeconds: READ_TIMEOUT_SECONDS, tables: { users } } });
}

/** The bytes of vidfeeds's database (and its WAL), as a digest. */
export function databaseBytes(file: string): string {
  const hash = createHash('sha256').update(readFileSync(file));
  if (existsSync(`${file}-wal`)) hash.update(readFileSync(`${file}-wal`));
  return hash.digest('hex');
}

export interface RunningSync {
  /** Resolves with the exit code (or the signal) and stderr once the sync exits. */
  ended: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  exited(): boolean;
  kill(signal: NodeJS.Signals): void;
}

/**
 * `vidfeeds sync` of the site as a process of its own. It is killed after `limitMs`, so that a
 * sync that never ends fails its test with a signal instead of holding the suite.
 */
export function startSync(site: SyncSite, from: string | null, limitMs = 90_000): RunningSync {
  const args = ['sync', '--db', site.db, '--config', site.config, ...(from === null ? [] : ['--from', from])];
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, FORCE_COLOR: '0' } });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr });
    }),
  );
  return { ended, exited: () => child.exitCode !== null || child.signalCode !== null, kill: (signal) => child.kill(signal) };
}

/** Polls `find` until it gives a value; fails when the sync exited first or a minute passed. */
export async function waitFor<T>(what: string, sync: RunningSync, find: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + 60_000;
  for (;;) {
    const found = await find();
    if (found !== undefined) return found;
    if (sync.exited()) throw new Error(`the sync exited before ${what}: ${(await sync.ended).stderr}`);
    if (Date.now() > end) throw new Error(`no ${what} within a minute`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The sync ended with `code` and a message matching `message`, and the database is byte for byte `before`. */
export async function expectEnded(sync: RunningSync, code: number, message: RegExp, db: string, before: string): Promise<void> {
  const end = await sync.ended;
  expect({ code: end.code, signal: end.signal }, end.stderr).toEqual({ code, signal: null });
  expect(end.stderr).toMatch(message);
  expect(end.stderr).toMatch(/nothing was written/);
  expect(databaseBytes(db)).toBe(before);
}

/** Maps `users` alone by `query` in the site's configuration (with `extra` settings of `sync`). */
export function mapUsers(site: SyncSite, query: string, extra: Record<string, unknown> = {}): void {
  const { sync } = JSON.parse(usersOnly(query)) as { sync: Record<string, unknown> };
  writeFileSync(site.config, JSON.stringify({ baseUrl: 'https://videos.example.org', sync: { ...sync, ...extra } }));
}

/**
 * A site synced once by `fast`, then changed in the source by `change` (so that a sync that
 * completed would write), and mapped by `slow`, whose read lasts long enough to be broken.
 */
export async function slowSite(dir: string, from: string, fast: string, slow: string, change: () => Promise<unknown>): Promise<SyncSite> {
  const site = syncSite(dir, usersOnly(fast), from);
  const first = site.sync();
  expect(first.code, first.stderr).toBe(0);
  await change();
  mapUsers(site, slow);
  return site;
}

/**
 * Sends `signal` to a sync once `waiting` finds it waiting for a slow query of its source, and
 * checks that it ends at once, as a stopped sync does (130 or 143, nothing written), not when the
 * query returns.
 */
/**
 * The server no longer runs the stopped sync's query (`running` finds it): asked to end it before
 * the sync exits, it has; left alone, PostgreSQL runs a 30 s sleep to its end, and MariaDB notices
 * the dropped client only at its next check, some 5 s on.
 */
export async function expectQueryEndedOnServer(running: () => Promise<unknown>): Promise<void> {
  let still: unknown;
  for (let waited = 0; waited < 2000; waited += 100) {
    still = await running();
    if (still === undefined) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(still, 'the query still runs on the server').toBeUndefined();
}

export async function expectStoppedAtOnce(sync: RunningSync, signal: 'SIGINT' | 'SIGTERM', waiting: () => Promise<unknown>, db: string, before: string): Promise<void> {
  await waitFor('the sync waiting for its slow query', sync, waiting);
  const sent = Date.now();
  sync.kill(signal);
  await expectEnded(sync, signal === 'SIGINT' ? 130 : 143, new RegExp(`${signal}: stopping the sync[\\s\\S]*stopped by ${signal}: nothing was written`), db, before);
  expect(Date.now() - sent).toBeLessThan(5000);
}
