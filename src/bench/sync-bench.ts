import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
 * `npm run bench -- --sync [--users 100000] [--servers mariadb,postgres] [--pairs N]`: the
 * feed-heavy demo site loaded into a real MariaDB (and PostgreSQL) server with vidfeeds's own
 * column names and a `changed_at` the server sets on every write (the watermark of `sync
 * --changed-only`), then timed: the first sync into an empty vidfeeds database, a sync in which
 * nothing changed and the driver alone reading the same rows in the same order (the floor), N
 * times back to back (their medians are judged), the same no-change sync with
 * --changed-only, and after 1% of the videos changed a --changed-only sync, then after another 1%
 * a full one; each with its peak RSS. The no-change and 1% syncs are judged against 1.5 times the
 * floor, the peaks against 200 MB.
 */

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'sync-bench-child.js');
const BIN = resolve(dirname(fileURLToPath(import.meta.url)), '../../bin/vidfeeds.js');

interface Timed {
  seconds: number;
  maxRssKb: number;
  report: Record<string, unknown>;
}

export async function syncBenchMain(argv: string[]): Promise<void> {
  let users = 100_000;
  let kinds: Array<'mariadb' | 'postgres'> = ['mariadb', 'postgres'];
  let pairs = 1;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--users') users = Number((argv[++i] ?? '').replace(/_/g, ''));
    else if (argv[i] === '--servers') kinds = (argv[++i] ?? '').split(',') as typeof kinds;
    else if (argv[i] === '--pairs') pairs = Number(argv[++i]);
    else if (argv[i] !== '--sync') throw new Error(`unknown option ${argv[i]} with --sync; options: --users N, --servers mariadb,postgres, --pairs N`);
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
        await benchServer(server, demo, dir, pairs);
      } finally {
        server.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchServer(server: BenchServer, demo: string, dir: string, pairs: number): Promise<void> {
  const loadStarted = performance.now();
  const exec = await connect(server);
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
  const target = join(dir, `${server.kind}.vidfeeds.sqlite`);
  await runProcess(process.execPath, [BIN, 'init', '--db', target]);
  const run = (mode: 'sync' | 'sync-changed' | 'read') => runChild([mode, target, server.url, mapping]);
  const editPercent = (rest: number) =>
    exec.query(
      server.kind === 'mariadb'
        ? `UPDATE videos SET title = CONCAT(title, ' (edited)') WHERE id % 100 = ${rest}`
        : `UPDATE videos SET title = title || ' (edited)' WHERE id % 100 = ${rest}`,
    );
  const first = await run('sync');
  line('first sync', first);
  // The no-change sync and the driver's read, back to back, `pairs` times: the medians are judged,
  // since the server's reads vary with what the OS has cached from one run to the next.
  const nones: Timed[] = [];
  const reads: Timed[] = [];
  for (let i = 0; i < pairs; i++) {
    nones.push(await run('sync'));
    line('no-change sync', nones[i]!);
    reads.push(await run('read'));
    line('driver read', reads[i]!);
  }
  const none = median(nones);
  const read = median(reads);
  if (pairs > 1) console.log(`   medians of ${pairs}: no-change sync ${none.seconds.toFixed(2)} s, driver read ${read.seconds.toFixed(2)} s`);
  const noneChanged = await run('sync-changed');
  line('no-change, --changed-only', noneChanged);
  await editPercent(0);
  const changedOnly = await run('sync-changed');
  line('1%, --changed-only', changedOnly);
  await editPercent(1);
  const changed = await run('sync');
  line('1%-changed sync', changed);
  const ratio = (t: Timed) => (t.seconds / read.seconds).toFixed(2);
  const judged = (t: Timed) => `${ratio(t)} (${t.seconds <= 1.5 * read.seconds ? 'met' : 'NOT met'})`;
  const peak = Math.max(first.maxRssKb, ...nones.map((t) => t.maxRssKb), noneChanged.maxRssKb, changedOnly.maxRssKb, changed.maxRssKb) / 1024;
  console.log(
    `   / driver read, target at most 1.5: no-change ${judged(none)}, 1%-changed ${judged(changed)}; ` +
      `with --changed-only: no-change ${judged(noneChanged)}, 1%-changed ${judged(changedOnly)}; ` +
      `peak RSS ${peak.toFixed(0)} MB (target under 200: ${peak < 200 ? 'met' : 'NOT met'})`,
  );
  await exec.end();
}

/** The run of median seconds (the lower middle of an even count). */
function median(runs: readonly Timed[]): Timed {
  return [...runs].sort((a, b) => a.seconds - b.seconds)[Math.floor((runs.length - 1) / 2)]!;
}

function line(what: string, t: Timed): void {
  const changed = Number(t.report.changedTables ?? 0) > 0 ? `, ${t.report.changedTables} tables by changed rows` : '';
  const detail = 'rows' in t.report ? `${t.report.rows} rows` : `${t.report.changes} changes, ${t.report.skipped} skipped${changed}`;
  console.log(`   ${what.padEnd(26)} ${t.seconds.toFixed(2).padStart(8)} s  ${(t.maxRssKb / 1024).toFixed(0).padStart(5)} MB  ${detail}`);
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

function runChild(args: string[]): Promise<Timed> {
  // VIDFEEDS_BENCH_PROFILE_DIR=<dir>: each timed run writes a CPU profile there.
  const profile = process.env.VIDFEEDS_BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.VIDFEEDS_BENCH_PROFILE_DIR}`] : [];
  return runProcess(process.execPath, [...profile, CHILD, ...args]).then((stdout) => {
    const found = stdout.split('\n').find((l) => l.startsWith('BENCH '));
    if (found === undefined) throw new Error(`sync bench child printed no result: ${stdout}`);
    const report = JSON.parse(found.slice(6)) as Record<string, unknown>;
    return { seconds: Number(report.seconds), maxRssKb: Number(report.maxRssKb), report };
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
