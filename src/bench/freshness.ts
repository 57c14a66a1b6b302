import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { SYNC_ORDER } from '../sync/table-plan.js';
import type { ChangeLine, WriterMix } from './writer.js';

/**
 * `npm run bench -- --freshness`: how long a live site waits for its documents. `vidfeeds watch`
 * runs on a copy of the demo database while a writer process (writer.ts) commits a mix of changes
 * (uploads, title and profile edits, privacy flips, deletions, recommendations) at a steady rate.
 * For each change the bench polls the files the change should alter until every one holds its new
 * bytes (or is gone), and takes the time from the commit. It prints p50, p95, p99 and max, the
 * number of builds, the watcher's CPU share and peak RSS, and at the end compares the watched tree
 * with a full build of the same database into a fresh directory (nothing lost, nothing stale).
 *
 * With `syncEvery` (`--sync-every S`), the writer commits to a site database of its own (a copy of
 * the demo one, mapped table for table) and watch runs with `--sync-every S`: the time is then
 * from a commit in the site's own database to its documents in place, through `vidfeeds sync`.
 */

export const FRESHNESS_TARGETS = { p50Ms: 100, p99Ms: 500, peakRssMb: 200 };

/** How often the bench looks at the files of the changes not yet in place. */
const POLL_MS = 2;
/** How long after the writer's last change the bench waits for the files before calling them late. */
const GRACE_MS = 60_000;

export interface FreshnessContext {
  /** The run's database (a copy of the demo one) and its folder. */
  db: string;
  runDir: string;
  /** The built CLI as a child that reports its own cost (child.ts), and the writer script. */
  cliChild: string;
  writerScript: string;
  rate: number;
  seconds: number;
  /** The writer's mix of changes: every kind, or title edits alone. */
  mix: WriterMix;
  /** Sync from a site database of its own this often (seconds), instead of writing to vidfeeds's. */
  syncEvery: number | null;
  env: Record<string, string>;
  /** Runs a vidfeeds command to completion (bench.ts). */
  runCli: (args: string[]) => Promise<{ seconds: number; stderr: string }>;
  /** Resolves when the file system is quiet enough to time on (disk-probe.ts); throws if it stays busy. */
  quietDisk: () => Promise<void>;
  lines: (line: string) => void;
}

export interface Outcome {
  change: ChangeLine;
  /** Milliseconds from the commit to the moment every file held its new bytes; null if never seen. */
  ms: number | null;
}

const now = () => performance.timeOrigin + performance.now();

export async function benchFreshness(ctx: FreshnessContext): Promise<void> {
  const { db, runDir, lines } = ctx;
  const out = join(runDir, 'watched');
  const config = join(runDir, 'vidfeeds.config.json');
  // The site's own database, when syncing: the demo's tables under their own names.
  const source = ctx.syncEvery === null ? null : join(runDir, 'source.sqlite');
  if (source !== null) copyFileSync(db, source);
  const sync = source === null ? {} : { sync: { from: `sqlite:${source}`, tables: Object.fromEntries(SYNC_ORDER.map((t) => [t, `SELECT * FROM "${t}"`])) } };
  writeFileSync(config, `${JSON.stringify({ baseUrl: 'https://videos.example.org', ...sync })}\n`);
  // A live site writes in WAL mode: readers (vidfeeds) and the writer do not block each other.
  for (const file of source === null ? [db] : [db, source]) {
    const site = new Database(file);
    site.pragma('journal_mode = WAL');
    site.close();
  }
  const cli = (dir: string) => ['--db', db, '--out', dir, '--state', `${dir}.state.sqlite`, '--config', config];
  const syncing = ctx.syncEvery === null ? [] : ['--sync-every', String(ctx.syncEvery)];

  const first = await ctx.runCli(['build', ...cli(out)]);
  lines(`first full build    ${first.seconds.toFixed(2)} s (untimed: the tree watch starts from)`);
  await ctx.quietDisk();

  // watch, as its own process so its CPU time and peak RSS are its own.
  const watchStarted = now();
  // VIDFEEDS_BENCH_PROFILE_DIR=<dir>: watch writes a CPU profile there (sum it with dist/bench/stages.js).
  const profile = process.env.VIDFEEDS_BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.VIDFEEDS_BENCH_PROFILE_DIR}`] : [];
  const watch = spawn(process.execPath, [...profile, ctx.cliChild, 'watch', ...cli(out), ...syncing], { env: { ...process.env, ...ctx.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let watchErr = '';
  let watchOut = '';
  watch.stderr.setEncoding('utf8').on('data', (d: string) => (watchErr += d));
  watch.stdout.setEncoding('utf8').on('data', (d: string) => (watchOut += d));
  const watchExit = new Promise<number | null>((resolve) => watch.on('close', (code) => resolve(code)));
  try {
    const ready = await until(() => /start: (full|incremental) build/.test(watchErr) || watch.exitCode !== null, 600_000);
    if (!ready || watch.exitCode !== null) throw new Error(`watch did not make its first build:\n${watchErr}`);

    const outcomes = await runWriter(ctx, source ?? db, (entry) => {
      entry.left = entry.left.filter((e) => !inPlace(out, e));
      return entry.left.length === 0;
    });
    // The last changes' sitemap dates are owed for up to a second (docs/incremental.md): stop watch
    // once its pass has run, so the sitemap read below is the one a crawler meets after the run.
    await until(() => !lastBuildOwesLastmods(watchErr) || watch.exitCode !== null, 30_000);

    watch.kill('SIGINT');
    const code = await watchExit;
    const watchSeconds = (now() - watchStarted) / 1000;
    const line = watchOut.split('\n').find((l) => l.startsWith('BENCH '));
    if (code !== 0 || line === undefined) throw new Error(`watch exited with ${code}:\n${watchErr.slice(-4000)}`);
    const usage = JSON.parse(line.slice('BENCH '.length)) as { maxRssKb: number; userMs: number; systemMs: number };
    const builds = (watchErr.match(/: (full|incremental) build \(/g) ?? []).length - 1; // less the one at start
    const problems = watchErr.split('\n').filter((l) => /build failed|waiting:/.test(l));
    writeFileSync(join(runDir, 'watch.log'), watchErr); // kept with --keep

    report(ctx, outcomes, { builds, watchSeconds, usage, problems });

    // Truthful: every changed document's lastmod is no earlier than the second of its commit.
    const early = earlyLastmods(out, outcomes);
    lines(
      early.length === 0
        ? `sitemap             every changed document's lastmod is no earlier than its commit (truthful: ok)`
        : `sitemap             ${n(early.length)} lastmods earlier than their document's change (MISSED), e.g. ${early.slice(0, 3).join(', ')}`,
    );

    // Nothing lost: the watched tree is what a full build of the final database gives.
    const fresh = join(runDir, 'fresh');
    await ctx.runCli(['build', ...cli(fresh)]);
    const differences = compareTrees(out, fresh);
    lines(
      differences.count === 0
        ? `after the run       the watched tree equals a full build of the final database: ${n(differences.files)} files (nothing lost: ok)`
        : `after the run       ${n(differences.count)} files differ from a full build of the final database (MISSED), e.g. ${differences.first.join(', ')}`,
    );
  } finally {
    if (watch.exitCode === null) watch.kill('SIGKILL');
  }
}

/** A change the writer made that is not yet where the bench looks: what of it is left. */
export interface PendingChange {
  change: ChangeLine;
  left: ChangeLine['expect'];
}

/**
 * Runs the writer and times each of its changes until `arrived` says it is where the bench looks
 * (it may narrow `left` as parts of the change arrive); a poll waits for the last one's answers.
 */
export async function runWriter(
  ctx: Pick<FreshnessContext, 'writerScript' | 'runDir' | 'rate' | 'seconds' | 'mix'>,
  db: string,
  arrived: (entry: PendingChange) => boolean | Promise<boolean>,
  pollMs = POLL_MS,
): Promise<Outcome[]> {
  const writer = spawn(process.execPath, [ctx.writerScript, db, join(ctx.runDir, 'vidfeeds.config.json'), String(ctx.rate), String(ctx.seconds), '1', ctx.mix], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let writerErr = '';
  writer.stderr.setEncoding('utf8').on('data', (d: string) => (writerErr += d));
  const pending: PendingChange[] = [];
  const outcomes: Outcome[] = [];
  let done = false;
  let doneAt = 0;
  let buffered = '';
  writer.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const text = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      const parsed = JSON.parse(text) as ChangeLine | { done: number };
      if ('done' in parsed) {
        done = true;
        doneAt = now();
      } else {
        pending.push({ change: parsed, left: parsed.expect });
      }
    }
  });
  const writerExit = new Promise<number | null>((resolve) => writer.on('close', (code) => resolve(code)));

  for (;;) {
    const polled = [...pending];
    // When a change's answer is in: it is counted as late as the bench could have seen it.
    const seenAt = await Promise.all(polled.map(async (entry) => ((await arrived(entry)) ? now() : null)));
    const at = now();
    for (const [i, entry] of polled.entries()) {
      if (seenAt[i] === null) continue;
      outcomes.push({ change: entry.change, ms: seenAt[i]! - entry.change.committedAt });
      pending.splice(pending.indexOf(entry), 1);
    }
    if (writer.exitCode !== null && writer.exitCode !== 0) throw new Error(`the writer failed:\n${writerErr}`);
    if (done && (pending.length === 0 || at - doneAt > GRACE_MS)) break;
    await sleep(pollMs);
  }
  await writerExit;
  for (const entry of pending) outcomes.push({ change: entry.change, ms: null });
  return outcomes;
}

function inPlace(out: string, expectation: ChangeLine['expect'][number]): boolean {
  const file = join(out, expectation.path);
  if ('absent' in expectation) return !existsSync(file);
  try {
    const text = readFileSync(file, 'latin1');
    return 'lacks' in expectation ? !text.includes(expectation.lacks) : text.includes(expectation.contains);
  } catch {
    return false;
  }
}

function report(
  ctx: FreshnessContext,
  outcomes: Outcome[],
  watch: { builds: number; watchSeconds: number; usage: { maxRssKb: number; userMs: number; systemMs: number }; problems: string[] },
): void {
  const { lines } = ctx;
  const seen = outcomes.filter((o) => o.ms !== null).map((o) => o.ms!).sort((a, b) => a - b);
  const late = outcomes.length - seen.length;
  const kinds = new Map<string, number[]>();
  for (const o of outcomes) if (o.ms !== null) kinds.set(o.change.kind, [...(kinds.get(o.change.kind) ?? []), o.ms]);
  const p50 = percentile(seen, 0.5);
  const p99 = percentile(seen, 0.99);
  const rssMb = watch.usage.maxRssKb / 1024;
  const cpu = (watch.usage.userMs + watch.usage.systemMs) / (watch.watchSeconds * 1000);
  lines(`writer              ${n(outcomes.length)} changes (${ctx.mix} mix) at ${ctx.rate}/s for ${ctx.seconds} s: ${[...kinds].map(([k, v]) => `${v.length} ${k}`).join(', ')}`);
  lines(
    `commit → in place   p50 ${ms(p50)}   p95 ${ms(percentile(seen, 0.95))}   p99 ${ms(p99)}   max ${ms(seen.at(-1) ?? NaN)}` +
      // Through a sync, a change waits for the next one: the targets are those of a direct commit.
      (ctx.syncEvery !== null
        ? `   (through a sync every ${ctx.syncEvery} s)`
        : `   (targets p50 < ${FRESHNESS_TARGETS.p50Ms} ms: ${mark(p50 < FRESHNESS_TARGETS.p50Ms)}, p99 < ${FRESHNESS_TARGETS.p99Ms} ms: ${mark(p99 < FRESHNESS_TARGETS.p99Ms)})`) +
      (late > 0 ? `   ${late} changes NOT in place ${GRACE_MS / 1000} s after the last commit (MISSED)` : ''),
  );
  for (const [kind, times] of kinds) {
    times.sort((a, b) => a - b);
    lines(`  ${kind.padEnd(16)}  p50 ${ms(percentile(times, 0.5))}   p99 ${ms(percentile(times, 0.99))}   max ${ms(times.at(-1)!)}   (${times.length})`);
  }
  lines(
    `watch               ${watch.builds} builds (${(outcomes.length / Math.max(watch.builds, 1)).toFixed(1)} changes each)   CPU ${(cpu * 100).toFixed(0)}% of one core over ${watch.watchSeconds.toFixed(0)} s` +
      `   peak RSS ${rssMb.toFixed(0)} MB (target < ${FRESHNESS_TARGETS.peakRssMb} MB: ${mark(rssMb < FRESHNESS_TARGETS.peakRssMb)})`,
  );
  for (const problem of watch.problems.slice(0, 5)) lines(`watch reported      ${problem}`);
}

/**
 * The URLs a change listed whose sitemap `<lastmod>` is earlier than the second the change was
 * committed in (sitemap dates have a second's resolution), read from the sitemap files on disk.
 */
function earlyLastmods(out: string, outcomes: readonly Outcome[]): string[] {
  const lastmods = new Map<string, number>();
  for (const file of readdirSync(out).filter((f) => /^sitemap[^/]*\.xml$/.test(f))) {
    for (const match of readFileSync(join(out, file), 'utf8').matchAll(/<loc>([^<]*)<\/loc><lastmod>([^<]*)<\/lastmod>/g)) {
      lastmods.set(match[1]!.replace(/&amp;/g, '&'), Date.parse(match[2]!));
    }
  }
  const early: string[] = [];
  const latest = new Map<string, number>();
  for (const { change } of outcomes) for (const url of change.listed) latest.set(url, Math.max(latest.get(url) ?? 0, change.committedAt));
  for (const [url, committedAt] of latest) {
    const lastmod = lastmods.get(url);
    if (lastmod === undefined || lastmod < Math.floor(committedAt / 1000) * 1000) early.push(`${url} (${lastmod === undefined ? 'not listed' : new Date(lastmod).toISOString()})`);
  }
  return early;
}

/** Files (dot-named entries left out) that are not the same in both trees. */
export function compareTrees(a: string, b: string): { files: number; count: number; first: string[] } {
  const left = listFiles(a);
  const right = new Set(listFiles(b));
  const differ: string[] = [];
  for (const path of left) {
    if (!right.delete(path)) differ.push(`${path} (only in the watched tree)`);
    else if (!comparable(path, readFileSync(join(a, path))).equals(comparable(path, readFileSync(join(b, path))))) differ.push(`${path} (other bytes)`);
  }
  for (const path of right) differ.push(`${path} (missing from the watched tree)`);
  return { files: left.length, count: differ.length, first: differ.slice(0, 5) };
}

/**
 * A file's bytes as the comparison takes them: a sitemap's (and its compressed forms') without
 * the lastmod dates, which say when the build that changed each document ran, and so differ
 * between the watched tree and a full build made after it.
 */
function comparable(path: string, body: Buffer): Buffer {
  const sitemap = /^sitemap[^/]*\.xml(\.gz|\.br)?$/.exec(path);
  if (sitemap === null) return body;
  const text = sitemap[1] === '.gz' ? gunzipSync(body) : sitemap[1] === '.br' ? brotliDecompressSync(body) : body;
  return Buffer.from(text.toString('utf8').replace(/<lastmod>[^<]*<\/lastmod>/g, ''));
}

function listFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string, prefix: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const path = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
      if (entry.isDirectory()) walk(join(dir, entry.name), path);
      else files.push(path);
    }
  };
  walk(root, '');
  return files;
}

export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

/** Whether `condition` came true within `maxMs`. */
/** Whether watch's latest build left sitemap dates for its next pass ("…, sitemap dates owed)"). */
function lastBuildOwesLastmods(log: string): boolean {
  const builds = log.match(/: (full|incremental) build \([^\n]*/g) ?? [];
  return builds.at(-1)?.includes('sitemap dates owed') ?? false;
}

export async function until(condition: () => boolean, maxMs: number): Promise<boolean> {
  const deadline = Date.now() + maxMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

const sleep = (msToWait: number) => new Promise((resolve) => setTimeout(resolve, msToWait));
const n = (value: number) => Math.round(value).toLocaleString('en-US');
const ms = (value: number) => `${Number.isNaN(value) ? '-' : value.toFixed(0)} ms`.padStart(8);
const mark = (ok: boolean) => (ok ? 'ok' : 'MISSED');
