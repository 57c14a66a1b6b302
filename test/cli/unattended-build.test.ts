import Database from 'better-sqlite3';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildRecordName } from '../../src/pipeline/record/build-record.js';
import { STAGING_DIR } from '../../src/pipeline/write/output-writer.js';
import { BIN, cli, cliAsync, readTree } from '../helpers/cli.js';
import { validateReport } from '../helpers/report-schema.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';
import { oldOrNew, undated } from '../helpers/tree.js';
import { until } from '../helpers/until.js';


/**
 * What a cron job or CI wrapper acts on, run as it runs vidfeeds: the --json report, exit 75 and
 * --wait when another build holds the lock, and a clean stop on SIGTERM and SIGINT.
 */

const RECORD = buildRecordName(undefined);

function collect(child: ReturnType<typeof cliAsync>): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

function site(users: number) {
  const { dir } = tempDir('vidfeeds-unattended-');
  const db = join(dir, 'site.sqlite');
  expect(cli(['demo', '--db', db, '--users', String(users)]).code).toBe(0);
  return { dir, db, out: join(dir, 'out'), lock: join(dir, '.vidfeeds', 'out.lock') };
}

function run(db: string, statements: string): void {
  const conn = new Database(db);
  conn.exec(statements);
  conn.close();
}

describe('build --json', () => {
  it('prints one object meeting the report schema: mode, counts, every skipped row, and the URLs written and removed', () => {
    const { db, out } = site(12);
    // A row that cannot be published: its name is a site-wide file's.
    run(db, `INSERT INTO users (username, display_name, created_at, updated_at) VALUES ('robots.txt', 'Hostile', 1704067200, 1704067200)`);
    const first = cli(['build', '--db', db, '--out', out, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const report = JSON.parse(first.stdout);
    expect(validateReport(report)).toEqual([]);
    expect(report).toMatchObject({ command: 'build', ok: true, exitCode: 0, mode: 'full', reason: 'first build: no saved state' });
    expect(report.skipped).toEqual([expect.objectContaining({ kind: 'user', key: 'robots.txt', reason: expect.stringContaining('site-wide file') })]);
    expect(report.counts.skipped).toBe(1);
    // Every file written, by its public URL: as many as were written, the directory index by its directory.
    expect(report.urls.written).toHaveLength(report.counts.written);
    expect(report.urls.written).toContain('http://localhost:8080/alice/rss/');
    expect(report.urls.written).toContain('http://localhost:8080/sitemap.xml');
    expect(new Set(report.urls.written).size).toBe(report.urls.written.length);
    // The summary still goes to stderr; stdout holds the one object.
    expect(first.stderr).toMatch(/full build/);

    run(db, `UPDATE users SET state = 'suspended' WHERE username = 'alice'; UPDATE users SET display_name = 'Bob B.' WHERE username = 'bob'`);
    // A suspension that removes more than a tenth of a small site: the removal guard is let through.
    const second = cli(['build', '--db', db, '--out', out, '--json', '--quiet', '--allow-removals']);
    expect(second.code).toBe(0);
    expect(second.stderr).toBe('');
    const next = JSON.parse(second.stdout);
    expect(validateReport(next)).toEqual([]);
    expect(next.mode).toBe('incremental');
    expect(next.urls.removed).toEqual(expect.arrayContaining(['http://localhost:8080/alice/rss/', 'http://localhost:8080/alice/foaf/']));
    expect(next.urls.removed).toHaveLength(next.counts.removed);
    expect(next.urls.written).toContain('http://localhost:8080/bob/hcard/');
    expect(next.urls.written).not.toContain('http://localhost:8080/carol/hcard/');
  });

  it('reports an error as the one object too', () => {
    const { dir, out } = site(3);
    const result = cli(['build', '--db', join(dir, 'missing.sqlite'), '--out', out, '--json']);
    expect(result.code).toBe(2);
    const report = JSON.parse(result.stdout);
    expect(validateReport(report)).toEqual([]);
    expect(report).toMatchObject({ command: 'build', ok: false, exitCode: 2, error: expect.stringContaining('missing.sqlite does not exist') });
  });
});

describe('shards check --json', () => {
  it('prints one object meeting the report schema, for parts that agree and for a missing part', () => {
    const { db, out } = site(8);
    expect(cli(['build', '--db', db, '--out', out, '--shard', '1/2']).code).toBe(0);
    const missing = cli(['shards', 'check', out, '--json']);
    expect(missing.code).toBe(1);
    const partial = JSON.parse(missing.stdout);
    expect(validateReport(partial)).toEqual([]);
    expect(partial).toMatchObject({ command: 'shards check', ok: false, exitCode: 1, problems: ['part 2 of 2 is missing: no directory given holds a record of it'] });
    expect(partial.parts).toEqual([expect.objectContaining({ shard: { index: 1, count: 2 }, complete: true })]);

    expect(cli(['build', '--db', db, '--out', out, '--shard', '2/2']).code).toBe(0);
    const agree = cli(['shards', 'check', out, '--json', '--quiet']);
    expect(agree.code).toBe(0);
    expect(agree.stderr).toBe('');
    const whole = JSON.parse(agree.stdout);
    expect(validateReport(whole)).toEqual([]);
    expect(whole).toMatchObject({ ok: true, exitCode: 0, problems: [], counts: { directories: 1, records: 2, problems: 0 } });
    // Each part's tree checks against its own state.
    expect(cli(['check', '--out', out, '--shard', '1/2', '--db', db]).code).toBe(0);
  });
});

describe('progress', () => {
  it('on a terminal shows documents done of the total, the rate and the time left; --quiet shows none', () => {
    const { db, out } = site(30);
    expect(cli(['build', '--db', db, '--out', out]).code).toBe(0);
    // util-linux's script(1) gives the build a terminal; it copies what the build prints to stdout.
    const onTerminal = (extra: string) =>
      spawnSync('script', ['-qec', `'${process.execPath}' '${BIN}' build --db '${db}' --out '${out}' --full ${extra}`, '/dev/null'], { encoding: 'utf8' });
    const shown = onTerminal('');
    expect(shown.status, shown.stdout).toBe(0);
    // The full build expects as many documents as the last build recorded.
    const total = Number(/(\d+) documents in/.exec(shown.stdout)![1]);
    expect(shown.stdout).toMatch(new RegExp(`\r\x1b\\[K500/${total} documents, \\d+/s, \\d+(s|m\\d\\ds) left`));
    const quiet = onTerminal('--quiet');
    expect(quiet.status).toBe(0);
    expect(quiet.stdout).toBe('');
    // A first build counts the published users and videos for its total (rows a value check
    // then leaves out are counted, so the total is at most a little high, never low).
    const first = spawnSync('script', ['-qec', `'${process.execPath}' '${BIN}' build --db '${db}' --out '${out}-first'`, '/dev/null'], { encoding: 'utf8' });
    expect(first.status, first.stdout).toBe(0);
    const built = Number(/(\d+) documents in/.exec(first.stdout)![1]);
    const expected = Number(/\r\x1b\[K\d+\/(\d+) documents, /.exec(first.stdout)![1]);
    expect(expected).toBeGreaterThanOrEqual(built);
    expect(expected).toBeLessThan(built * 1.2);
  });
});

/**
 * A process that holds the lock of `out` until told to let go (its stdin closed), as a long build
 * would: no race with a real build that may finish before the second one starts.
 */
async function holdLock(out: string) {
  const lockModule = join(import.meta.dirname, '../../dist/lock/lock.js');
  const holder = spawn(
    process.execPath,
    ['--input-type=module', '-e', `
      const { acquireBuildLock } = await import(${JSON.stringify(pathToFileURL(lockModule).href)});
      const lock = acquireBuildLock(${JSON.stringify(out)}, { command: 'vidfeeds build' });
      process.stdout.write('held\\n');
      process.stdin.resume();
      process.stdin.on('end', () => { lock.release(); process.exit(0); });
    `],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  cleanUpAfterTest(() => holder.kill('SIGKILL'));
  const released = new Promise<number | null>((done) => holder.on('exit', (code) => done(code)));
  await new Promise<void>((done, fail) => {
    holder.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('held') && done());
    holder.on('exit', () => fail(new Error('the lock holder exited before it held the lock')));
  });
  return { pid: holder.pid!, release: () => (holder.stdin!.end(), released) };
}

describe('a second build while one runs', () => {
  it('exits 75 naming the holder; with --wait it waits and then builds', async () => {
    const { db, out, lock } = site(20);
    const holder = await holdLock(out);
    expect(existsSync(lock)).toBe(true);

    const second = cli(['build', '--db', db, '--out', out]);
    expect(second.code).toBe(75);
    expect(second.stderr).toContain(`is being built by another vidfeeds: "vidfeeds build", pid ${holder.pid}`);
    expect(second.stderr).toContain('--wait SECONDS');
    expect(existsSync(out)).toBe(false);

    const waiter = cliAsync(['build', '--db', db, '--out', out, '--wait', '300']);
    const waiting = collect(waiter);
    // Still waiting while the lock is held.
    await new Promise((done) => setTimeout(done, 1500));
    expect(waiter.exitCode).toBeNull();
    expect(await holder.release()).toBe(0);
    const b = await waiting;
    expect(b.code, b.stderr).toBe(0);
    expect(b.stderr).toMatch(/full build/);
    expect(existsSync(lock)).toBe(false);
  }, 120_000);

  it('hears SIGINT while it waits with --wait: exits 130 long before the wait is over, having built nothing, and --json says so', async () => {
    const { db, out, lock } = site(3);
    const holder = await holdLock(out);
    const waiter = cliAsync(['build', '--db', db, '--out', out, '--wait', '60', '--json']);
    const exited = await interruptWhileWaiting(waiter, 'SIGINT', 'waiting up to 60 s for the lock: output directory');
    expect(exited.code, exited.stderr).toBe(130);
    expect(exited.stderr).toContain('SIGINT: stopping the build after the current document');
    expect(exited.stderr).toContain('stopped by SIGINT while waiting for the lock: nothing was built');
    const report = JSON.parse(exited.stdout);
    expect(validateReport(report)).toEqual([]);
    expect(report).toMatchObject({
      command: 'build',
      ok: false,
      exitCode: 130,
      error: 'stopped by SIGINT while waiting for the lock: nothing was built',
      urls: { written: [], removed: [] },
    });
    expect(existsSync(out)).toBe(false);
    // The holder's lock is untouched.
    expect(readFileSync(lock, 'utf8')).toContain(`"pid":${holder.pid},`);
  }, 120_000);

  it('a deploy waiting with --wait for the build to finish hears SIGTERM: exits 143, having published nothing', async () => {
    const { out, lock } = site(1);
    mkdirSync(out);
    const holder = await holdLock(out);
    // Nothing listens at the endpoint: the deploy must stop before it asks the store anything.
    const deployer = cliAsync(['deploy', '--out', out, '--to', 's3://bucket/site', '--endpoint', 'http://127.0.0.1:9', '--wait', '60', '--json', '--log-level', 'debug']);
    const exited = await interruptWhileWaiting(deployer, 'SIGTERM', 'waiting up to 60 s for the lock: output directory');
    expect(exited.code, exited.stderr).toBe(143);
    expect(exited.stderr).toContain('SIGTERM: stopping the deploy, aborting the requests under way');
    expect(exited.stderr).toContain('stopped by SIGTERM while waiting for the lock: nothing was published');
    expect(JSON.parse(exited.stdout)).toEqual({ report: 1, command: 'deploy', ok: false, exitCode: 143, error: 'stopped by SIGTERM while waiting for the lock: nothing was published' });
    expect(readFileSync(lock, 'utf8')).toContain(`"pid":${holder.pid},`);
  }, 120_000);
});

/** Sends `signal` to a command once its stderr says it is `waiting`, and returns how it ended. */
async function interruptWhileWaiting(child: ReturnType<typeof cliAsync>, signal: NodeJS.Signals, waiting: string) {
  const ended = collect(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  expect(await until(() => stderr.includes(waiting), 30_000), stderr).toBe(true);
  child.kill(signal);
  // Bounded only so that a wait that never hears the signal fails here, not at the suite's timeout.
  const exited = await Promise.race([ended, new Promise<null>((done) => setTimeout(() => done(null), 30_000))]);
  if (exited === null) child.kill('SIGKILL');
  expect(exited, `still waiting 30 s after ${signal}`).not.toBeNull();
  return exited!;
}

describe('a build stopped by a signal', () => {
  // Small enough for the suite, large enough that the build is still running when the signal lands.
  async function stopMidway(signal: 'SIGTERM' | 'SIGINT', { extra = [] as string[], reference = false } = {}) {
    const { dir, db, out, lock } = site(250);
    expect(cli(['build', '--db', db, '--out', out]).code).toBe(0);
    const before = readTree(out);
    run(db, `UPDATE users SET display_name = display_name || ' (v2)'; UPDATE videos SET title = title || ' (v2)';`);
    let after = new Map<string, Buffer>();
    if (reference) {
      expect(cli(['build', '--db', db, '--out', join(dir, 'reference')]).code).toBe(0);
      after = readTree(join(dir, 'reference'));
    }

    const child = cliAsync(['build', '--db', db, '--out', out, ...extra]);
    const done = collect(child);
    const first = [...before.keys()].filter((p) => p.endsWith('/rss/index.rss')).sort()[0]!;
    const sawNew = await until(() => {
      try {
        return !readFileSync(join(out, first)).equals(before.get(first)!);
      } catch {
        return false;
      }
    }, 60_000);
    expect(sawNew).toBe(true);
    child.kill(signal);
    const result = await done;
    return { dir, db, out, lock, before, after, result };
  }

  it('on SIGTERM: exits 143 with a message, leaves no staging folder or lock, keeps every file whole, and the next build is incremental', async () => {
    const { db, out, lock, before, after, result } = await stopMidway('SIGTERM', { reference: true });
    expect(result.signal).toBeNull();
    expect(result.code).toBe(143);
    expect(result.stderr).toContain('vidfeeds: SIGTERM: stopping the build');
    expect(result.stderr).toMatch(/vidfeeds: stopped by SIGTERM: the files written so far are recorded/);
    expect(existsSync(join(out, STAGING_DIR))).toBe(false);
    expect(existsSync(lock)).toBe(false);
    // The tree is no longer what a record would say: there is none.
    expect(existsSync(join(out, RECORD))).toBe(false);

    const { old, fresh } = oldOrNew(readTree(out), before, after);
    expect(fresh).toBeGreaterThan(0);
    expect(old).toBeGreaterThan(0);

    // The next build follows from the last complete one and does not rewrite what the stopped one wrote.
    const next = cli(['build', '--db', db, '--out', out]);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toMatch(/^vidfeeds: incremental build \(\d+ changes since the last build → /);
    const written = Number(/ (\d+) written/.exec(next.stderr)![1]);
    const unchanged = Number(/ (\d+) unchanged/.exec(next.stderr)![1]);
    expect(unchanged).toBeGreaterThanOrEqual(fresh);
    expect(written).toBeLessThanOrEqual(old + 10);
    const final = readTree(out);
    expect([...final.keys()]).toEqual([...after.keys()]);
    for (const [path, body] of final) expect(undated(path, body).equals(undated(path, after.get(path)!)), path).toBe(true);
    expect(cli(['check', '--out', out, '--db', db]).code).toBe(0);
  }, 180_000);

  it('on SIGINT: exits 130, and --json lists what it wrote before it stopped', async () => {
    const { out, lock, before, result } = await stopMidway('SIGINT', { extra: ['--json'] });
    expect(result.code).toBe(130);
    expect(existsSync(lock)).toBe(false);
    expect(existsSync(join(out, STAGING_DIR))).toBe(false);
    const report = JSON.parse(result.stdout);
    expect(validateReport(report)).toEqual([]);
    expect(report).toMatchObject({ command: 'build', ok: false, exitCode: 130, error: expect.stringContaining('stopped by SIGINT') });
    // Every URL it lists is a file that really changed.
    expect(report.urls.written.length).toBeGreaterThan(0);
    const now = readTree(out);
    const changed = [...now].filter(([path, body]) => !before.get(path)?.equals(body)).length;
    expect(report.urls.written.length).toBe(changed);
  }, 180_000);
});
