import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { SITE_TABLES } from '../db/columns.js';
import { generateDemo } from '../db/demo-data.js';
import { openForWriting } from '../db/open-database.js';
import { SYNC_ORDER } from '../sync/table-plan.js';
import { serverAvailable, startBenchServer, type BenchServer } from './sync-servers.js';

/**
 * `npm run bench -- --sync [--users 100000] [--servers mariadb,postgres] [--pairs N] [--baseline DIR]`: the
 * feed-heavy demo site loaded into a real MariaDB (and PostgreSQL) server with vidfeeds's own
 * column names and a `changed_at` the server sets on every write (the watermark of `sync
 * --changed-only`), then timed: the first sync into an empty vidfeeds database, a sync in which
 * nothing changed and the driver alone reading the same rows in the same order (the floor), N
 * times back to back (their medians are judged), the same no-change sync with
 * --changed-only, and after 1% of the videos changed a --changed-only sync, then after another 1%
 * a full one; each with its peak RSS. The no-change and 1% syncs are judged against 1.5 times the
 * floor, the peaks against 200 MB.
 *
 * `--baseline DIR`: another checkout of vidfeeds, built (`npm run build`), whose syncs run beside
 * each of this one's, into a database of its own, from the same servers and rows: two versions of
 * the code compared back to back against one floor.
 */

const HERE = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** A checkout whose syncs the bench times: this one, or a baseline (`--baseline`). */
interface Checkout {
  name: string;
  child: string;
  bin: string;
}

function checkout(name: string, root: string): Checkout {
  const found = { name, child: join(root, 'dist/bench/sync-bench-child.js'), bin: join(root, 'bin/vidfeeds.js') };
  for (const file of [found.child, found.bin]) if (!existsSync(file)) throw new Error(`--baseline ${root}: no ${file} (build that checkout first: npm run build)`);
  return found;
}

interface Timed {
  seconds: number;
  /** The process's CPU time, user and system (NaN from a baseline whose child does not report it). */
  cpuSeconds: number;
  maxRssKb: number;
  report: Record<string, unknown>;
}

export async function syncBenchMain(argv: string[]): Promise<void> {
  let users = 100_000;
  let kinds: Array<'mariadb' | 'postgres'> = ['mariadb', 'postgres'];
  let pairs = 1;
  const checkouts = [checkout('this', HERE)];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--users') users = Number((argv[++i] ?? '').replace(/_/g, ''));
    else if (argv[i] === '--servers') kinds = (argv[++i] ?? '').split(',') as typeof kinds;
    else if (argv[i] === '--pairs') pairs = Number(argv[++i]);
    else if (argv[i] === '--baseline') checkouts.push(checkout('baseline', resolve(argv[++i] ?? '')));
    else if (argv[i] !== '--sync') throw new Error(`unknown option ${argv[i]} with --sync; options: --users N, --servers mariadb,postgres, --pairs N, --baseline DIR`);
  }
  if (!Number.isInteger(pairs) || pairs < 1) throw new Error('--pairs must be a whole number of at least 1');
  const dir = mkdtempSync(join(tmpdir(), 'vidfeeds-sync-bench-'));
  try {
    const demo = join(dir, 'demo.sqlite');
    const started = performance.now();
    const { db } = openForWriting(demo);
    db.pragma('journal_mode = OFF');
    const made = generateDemo(db, { users, seed: 1, shape: 'feed-heavy' });
    db.close();
    console.log(`== sync bench: feed-heavy, ${made.users} users, ${made.videos} videos (generated in ${((performance.now() - started) / 1000).toFixed(1)} s)`);
    for (const kind of kinds) {
      if (!serverAvailable(kind)) {
        console.log(`-- ${kind}: not installed (apt-get install ${kind === 'mariadb' ? 'mariadb-server' : 'postgresql'}), skipped`);
        continue;
      }
      const server = await startBenchServer(kind);
      try {
        await benchServer(server, demo, dir, pairs, checkouts);
      } finally {
        server.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchServer(server: BenchServer, demo: string, dir: string, pairs: number, checkouts: readonly Checkout[]): Promise<void> {
  const exec = await connect(server);
  const mapping = await loadSource(server, exec, demo, dir);
  // Each checkout syncs into a database of its own; the floor is this checkout's read.
  const runs = await Promise.all(checkouts.map((c) => syncRuns(server, c, mapping, dir)));
  const label = (c: Checkout, what: string) => (checkouts.length > 1 ? `${c.name}: ${what}` : what);
  const each = async (what: string, key: Exclude<keyof Timings, 'nones'>, mode: 'sync' | 'sync-changed') => {
    for (const r of runs) {
      r.timings[key] = await r.run(mode);
      line(label(r.checkout, what), r.timings[key]);
    }
  };
  const editPercent = (rest: number) =>
    exec.query(
      server.kind === 'mariadb'
        ? `UPDATE videos SET title = CONCAT(title, ' (edited)') WHERE id % 100 = ${rest}`
        : `UPDATE videos SET title = title || ' (edited)' WHERE id % 100 = ${rest}`,
    );
  await each('first sync', 'first', 'sync');
  // The no-change sync and the driver's read, back to back, `pairs` times: the medians are judged,
  // since the server's reads vary with what the OS has cached from one run to the next.
  const reads: Timed[] = [];
  for (let i = 0; i < pairs; i++) {
    // With a baseline, each pair starts with the other checkout: neither always runs right after the read.
    for (const r of i % 2 === 0 ? runs : [...runs].reverse()) {
      const t = await r.run('sync');
      r.timings.nones.push(t);
      line(label(r.checkout, 'no-change sync'), t);
    }
    reads.push(await runs[0]!.run('read'));
    line('driver read', reads[i]!);
  }
  const read = median(reads);
  await each('no-change, --changed-only', 'noneChanged', 'sync-changed');
  await editPercent(0);
  await each('1%, --changed-only', 'changedOnly', 'sync-changed');
  await editPercent(1);
  await each('1%-changed sync', 'changed', 'sync');
  for (const { checkout: c, timings } of runs) {
    if (pairs > 1) console.log(`   ${label(c, `medians of ${pairs}`)}: no-change sync ${median(timings.nones).seconds.toFixed(2)} s, driver read ${read.seconds.toFixed(2)} s`);
    judge(label(c, '/ driver read'), read, timings);
  }
  await exec.end();
}

/** Loads the demo site into the server's tables; returns the mapping file that reads them. */
async function loadSource(server: BenchServer, exec: Exec, demo: string, dir: string): Promise<string> {
  const loadStarted = performance.now();
  const source = new Database(demo, { readonly: true });
  const tables: Record<string, string> = {};
  let rows = 0;
  try {
    for (const table of SYNC_ORDER) {
      const count = (source.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n;
      if (count === 0) continue;
      rows += await loadTable(server.kind, exec, source, table);
      tables[table] = `SELECT * FROM ${quote(server.kind, table)}`;
    }
  } finally {
    source.close();
  }
  console.log(`-- ${server.kind}: ${rows} rows in ${Object.keys(tables).length} tables loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`);
  const mapping = join(dir, `${server.kind}.mapping.json`);
  writeFileSync(mapping, JSON.stringify(Object.fromEntries(Object.entries(tables).map(([t, query]) => [t, { query, decodeEntities: [], watermark: 'changed_at' }]))));
  return mapping;
}

/** What the bench times of one checkout's syncs. */
interface Timings {
  first?: Timed;
  nones: Timed[];
  noneChanged?: Timed;
  changedOnly?: Timed;
  changed?: Timed;
}

interface CheckoutRuns {
  checkout: Checkout;
  timings: Timings;
  run(mode: 'sync' | 'sync-changed' | 'read'): Promise<Timed>;
}

/** A checkout's database, made with its own `init`, and how to time one of its runs into it. */
async function syncRuns(server: BenchServer, checkout: Checkout, mapping: string, dir: string): Promise<CheckoutRuns> {
  const target = join(dir, `${server.kind}.${checkout.name}.vidfeeds.sqlite`);
  await runProcess(process.execPath, [checkout.bin, 'init', '--db', target]);
  return { checkout, timings: { nones: [] }, run: (mode) => runChild(checkout.child, [mode, target, server.url, mapping]) };
}

/** Prints a checkout's ratios to the driver's read against the targets, and its peak RSS. */
function judge(what: string, read: Timed, t: Timings): void {
  const ratio = (run: Timed) => (run.seconds / read.seconds).toFixed(2);
  const judged = (run: Timed | undefined) => (run === undefined ? 'not run' : `${ratio(run)} (${run.seconds <= 1.5 * read.seconds ? 'met' : 'NOT met'})`);
  const all = [t.first, ...t.nones, t.noneChanged, t.changedOnly, t.changed].filter((run): run is Timed => run !== undefined);
  const peak = Math.max(...all.map((run) => run.maxRssKb)) / 1024;
  console.log(
    `   ${what}, target at most 1.5: no-change ${judged(median(t.nones))}, 1%-changed ${judged(t.changed)}; ` +
      `with --changed-only: no-change ${judged(t.noneChanged)}, 1%-changed ${judged(t.changedOnly)}; ` +
      `peak RSS ${peak.toFixed(0)} MB (target under 200: ${peak < 200 ? 'met' : 'NOT met'})`,
  );
}

/** The run of median seconds (the lower middle of an even count). */
function median(runs: readonly Timed[]): Timed {
  return [...runs].sort((a, b) => a.seconds - b.seconds)[Math.floor((runs.length - 1) / 2)]!;
}

function line(what: string, t: Timed): void {
  const changed = Number(t.report.changedTables ?? 0) > 0 ? `, ${t.report.changedTables} tables by changed rows` : '';
  const detail = 'rows' in t.report ? `${t.report.rows} rows` : `${t.report.changes} changes, ${t.report.skipped} skipped${changed}`;
  const cpu = Number.isNaN(t.cpuSeconds) ? '' : `, CPU ${t.cpuSeconds.toFixed(2)} s`;
  console.log(`   ${what.padEnd(36)} ${t.seconds.toFixed(2).padStart(8)} s  ${(t.maxRssKb / 1024).toFixed(0).padStart(5)} MB  ${detail}${cpu}`);
}

type Exec = { query(sql: string, values?: unknown[]): Promise<unknown>; end(): Promise<void> };

async function connect(server: BenchServer): Promise<Exec> {
  if (server.kind === 'mariadb') {
    const url = new URL(server.url);
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const connection = await mysql.createConnection({ host: url.hostname, port: Number(url.port), user: 'root', charset: 'utf8mb4' });
        await connection.query('CREATE DATABASE site CHARACTER SET utf8mb4');
        await connection.query('USE site');
        return connection;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const admin = new pg.Client({ connectionString: server.url.replace(/\/site$/, '/postgres') });
      await admin.connect();
      await admin.query('CREATE DATABASE site');
      await admin.end();
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      return client;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

function quote(kind: BenchServer['kind'], name: string): string {
  return kind === 'mariadb' ? `\`${name}\`` : `"${name}"`;
}

/**
 * Creates `table` in the source with vidfeeds's column names, its key and a `changed_at` the
 * server sets on every write (MariaDB's ON UPDATE, a PostgreSQL trigger), indexed, and copies its
 * rows in batches.
 */
async function loadTable(kind: BenchServer['kind'], exec: Exec, source: Database.Database, table: string): Promise<number> {
  const info = source.prepare(`SELECT name, type FROM pragma_table_info(?)`).all(table) as Array<{ name: string; type: string }>;
  const type = (t: string) => (/INT/i.test(t) ? 'BIGINT' : /REAL/i.test(t) ? (kind === 'mariadb' ? 'DOUBLE' : 'double precision') : kind === 'mariadb' ? 'LONGTEXT' : 'text');
  const columns = info.map((c) => `${quote(kind, c.name)} ${type(c.type)}`).join(', ');
  const changedAt = kind === 'mariadb' ? 'changed_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)' : 'changed_at timestamptz NOT NULL DEFAULT now()';
  await exec.query(`CREATE TABLE ${quote(kind, table)} (${columns}, ${changedAt}, PRIMARY KEY (${SITE_TABLES[table]!.key.map((k) => quote(kind, k)).join(', ')}))`);
  await exec.query(`CREATE INDEX ${quote(kind, `${table}_changed_at`)} ON ${quote(kind, table)} (changed_at)`);
  if (kind === 'postgres') {
    await exec.query(`CREATE OR REPLACE FUNCTION vidfeeds_bench_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.changed_at := now(); RETURN NEW; END $$`);
    await exec.query(`CREATE TRIGGER ${quote(kind, `${table}_touch`)} BEFORE UPDATE ON ${quote(kind, table)} FOR EACH ROW EXECUTE FUNCTION vidfeeds_bench_touch()`);
  }
  const into = `${quote(kind, table)} (${info.map((c) => quote(kind, c.name)).join(', ')})`;
  const batch = Math.max(1, Math.floor(20_000 / info.length));
  let pending: unknown[][] = [];
  let count = 0;
  const flush = async () => {
    if (pending.length === 0) return;
    if (kind === 'mariadb') await exec.query(`INSERT INTO ${into} VALUES ?`, [pending]);
    else {
      const rowsSql = pending.map((row, r) => `(${row.map((_, c) => `$${r * info.length + c + 1}`).join(', ')})`).join(', ');
      await exec.query(`INSERT INTO ${into} VALUES ${rowsSql}`, pending.flat());
    }
    count += pending.length;
    pending = [];
  };
  for (const row of source.prepare(`SELECT * FROM "${table}"`).raw(true).iterate() as Iterable<unknown[]>) {
    // Text the demo writes as bytes (its hostile values) goes as text; PostgreSQL refuses NUL in text.
    pending.push(row.map((v) => (Buffer.isBuffer(v) ? v.toString('utf8') : typeof v === 'string' && kind === 'postgres' ? v.replaceAll('\u0000', '') : v)));
    if (pending.length >= batch) await flush();
  }
  await flush();
  return count;
}

function runChild(child: string, args: string[]): Promise<Timed> {
  // VIDFEEDS_BENCH_PROFILE_DIR=<dir>: each timed run writes a CPU profile there.
  const profile = process.env.VIDFEEDS_BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.VIDFEEDS_BENCH_PROFILE_DIR}`] : [];
  return runProcess(process.execPath, [...profile, child, ...args]).then((stdout) => {
    const found = stdout.split('\n').find((l) => l.startsWith('BENCH '));
    if (found === undefined) throw new Error(`sync bench child printed no result: ${stdout}`);
    const report = JSON.parse(found.slice(6)) as Record<string, unknown>;
    return { seconds: Number(report.seconds), cpuSeconds: Number(report.cpuSeconds), maxRssKb: Number(report.maxRssKb), report };
  });
}

function runProcess(program: string, args: string[]): Promise<string> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d.length > 0 && stderr.length < 100_000 ? d : ''));
    child.on('close', (code) => (code === 0 ? resolveRun(stdout) : reject(new Error(`${args.join(' ')} exited with ${code}: ${stderr.slice(-3000)}`))));
  });
}
