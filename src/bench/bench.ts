import Database from 'better-sqlite3';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEMO_SHAPES, generateDemo, type DemoShape } from '../db/demo-data.js';
import { FORMATS } from '../formats/registry.js';
import { openForWriting } from '../db/open-database.js';
import { acquireBuildLock, describeHolder, LockHeldError, type BuildLock } from '../pipeline/lock.js';
import { PROBE_FOLDER_PREFIX, waitForQuietDisk } from './disk-probe.js';
import { benchDeploy } from './deploy-bench.js';
import { benchFreshness } from './freshness.js';
import type { WriterMix } from './writer.js';
import { packTree } from './pack.js';

/**
 * `npm run bench`: builds demo sites of 10,000 and 100,000 users in both shapes of the demo
 * generator (`demo`, about five videos per user, and `feed-heavy`, every user's feeds full) and
 * prints, for each, the full build (wall time, documents per second, MB written, peak RSS), a
 * rebuild with nothing changed, a rebuild after one video edit, `vidfeeds check` of the tree, and
 * the floor: the same bytes written to the same paths with write-beside-and-rename and nothing else
 * (floor.ts); then the same full build with pre-compressed forms (`compress`) against both and
 * against its own floor, and the bytes the forms save. Figures, not a test: docs/performance.md.
 *
 *   npm run bench                      both sizes, both shapes
 *   npm run bench -- --users 10000     one size (a comma-separated list for several)
 *   npm run bench -- --shape feed-heavy  one shape (or demo; a comma-separated list for both)
 *   npm run bench -- --only rss,atom   build only these formats (the full build and its floor;
 *                                      the incremental phases need every format and are left out)
 *   npm run bench -- --keep            keep this run's trees under bench-cache/runs/
 *   npm run bench -- --pairs 3         time the full build and its floor 3 times each, alternating,
 *                                      and judge the median of the pairs' ratios (the floor of the
 *                                      same files moves by a third from one minute to the next)
 *   npm run bench -- --xml builder     render every document but the RSS feeds (markup of their own,
 *                                      rss.ts) through xmlbuilder2's DOM (the figures before the
 *                                      fast paths of src/render/xml.ts)
 *   npm run bench -- --freshness       instead: the time from a commit to its documents in place
 *                                      while `vidfeeds watch` runs (freshness.ts); --rate <changes
 *                                      per second> (20), --seconds <n> (60) and --mix mixed|titles
 *                                      (every kind of change, or title edits alone) shape the writer;
 *                                      --sync-every <s>: the writer commits to a site database of
 *                                      its own, which watch syncs from every s seconds
 *
 * Every build runs as its own process (child.ts) so its peak RSS is its own. Demo databases are
 * cached in bench-cache/ (gitignored; VIDFEEDS_BENCH_CACHE names another folder), keyed by the
 * generator's code. Each run builds into fresh directories and removes them only after every
 * timing (deleting a large tree just before timing a build slows the file system down), along
 * with trees an interrupted run left.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The demo databases, the disk's baseline and the runs' trees: VIDFEEDS_BENCH_CACHE (another disk, a test's folder), else bench-cache/. */
const CACHE = process.env.VIDFEEDS_BENCH_CACHE ? resolve(process.env.VIDFEEDS_BENCH_CACHE) : join(ROOT, 'bench-cache');
const RUNS = join(CACHE, 'runs');
const CLI_CHILD = join(ROOT, 'dist/bench/child.js');
const STORE_CHILD = join(ROOT, 'dist/bench/s3rver-child.js');
const FLOOR_CHILD = join(ROOT, 'dist/bench/floor.js');
const WRITER = join(ROOT, 'dist/bench/writer.js');
const DISK_BASELINE = join(CACHE, 'disk-probe.json');

const TARGETS = { fullOverFloor: 1.5, noChangeOverFull: 0.1, oneVideoSeconds: 0.5 };

const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

/**
 * How far above its floor a full build may take. At full size the targets are the design's: the
 * demo shape at 100,000 users writes small files and is bound by the disk, so it is held closer
 * (1.15); a feed-heavy build of 50,000 users or more is bound by reading and rendering on the main
 * thread, where Node 20's better-sqlite3 builds each row value by value (1.6 there, 1.5 on 22+).
 */
function fullOverFloorTarget(shape: DemoShape, users: number): number {
  if (shape === 'demo' && users >= 100_000) return 1.15;
  if (shape === 'feed-heavy' && users >= 50_000) return NODE_MAJOR < 22 ? 1.6 : 1.5;
  return TARGETS.fullOverFloor;
}
/** Peak RSS targets, by shape: a feed-heavy build holds more per user. */
const PEAK_RSS_MB: Record<DemoShape, number> = { demo: 300, 'feed-heavy': 200 };

interface ChildResult {
  seconds: number;
  maxRssKb: number;
  stdout: string;
  stderr: string;
  report: Record<string, unknown>;
}

interface BenchOptions {
  users: number[];
  shapes: DemoShape[];
  /** Formats to build (`--only`); every format when absent. */
  only?: string[];
  keep: boolean;
  /** Full builds timed against their floor, each pair right after the one before (`--pairs`). */
  pairs: number;
  /** The deploy run instead of the build timings (deploy-bench.ts). */
  deploy: boolean;
  /** The freshness run instead of the build timings, with its writer's rate and length, and how often it syncs from a site database of its own (null: it writes to vidfeeds's). */
  freshness: { rate: number; seconds: number; syncEvery: number | null; mix: WriterMix } | null;
  /** Environment of every build. */
  env: Record<string, string>;
}

function parseArgs(argv: string[]): BenchOptions {
  let users = [10_000, 100_000];
  let shapes: DemoShape[] = [...DEMO_SHAPES];
  let only: string[] | undefined;
  let keep = false;
  let pairs = 1;
  let freshness: BenchOptions['freshness'] = null;
  let deploy = false;
  let rate = 20;
  let seconds = 60;
  let syncEvery: number | null = null;
  let mix: WriterMix = 'mixed';
  const env: Record<string, string> = {};
  const positive = (flag: string, value: string | undefined) => {
    const number = Number(value);
    if (!Number.isFinite(number) || number <= 0) throw new Error(`${flag} takes a positive number`);
    return number;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--users') {
      users = (argv[++i] ?? '').split(',').map((n) => Number(n.replace(/_/g, '')));
      if (users.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--users takes a comma-separated list of user counts, e.g. 10000,100000');
    } else if (arg === '--shape') {
      const names = (argv[++i] ?? '').split(',');
      const unknown = names.filter((name) => !(DEMO_SHAPES as readonly string[]).includes(name));
      if (unknown.length > 0) throw new Error(`--shape takes a comma-separated list of ${DEMO_SHAPES.join(', ')}; not ${unknown.join(', ')}`);
      shapes = names as DemoShape[];
    } else if (arg === '--only') {
      only = (argv[++i] ?? '').split(',').filter(Boolean);
      const unknown = only.filter((name) => !FORMATS.some((format) => format.name === name));
      if (only.length === 0 || unknown.length > 0) throw new Error(`--only takes a comma-separated list of formats (${FORMATS.map((f) => f.name).join(', ')})`);
    } else if (arg === '--keep') {
      keep = true;
    } else if (arg === '--pairs') {
      pairs = Number(argv[++i]);
      if (!Number.isInteger(pairs) || pairs < 1 || pairs > 9) throw new Error('--pairs takes a whole number from 1 to 9');
    } else if (arg === '--freshness') {
      freshness = { rate, seconds, syncEvery, mix };
    } else if (arg === '--mix') {
      const given = argv[++i];
      if (given !== 'mixed' && given !== 'titles') throw new Error('--mix takes mixed or titles');
      mix = given;
    } else if (arg === '--sync-every') {
      syncEvery = positive(arg, argv[++i]);
    } else if (arg === '--deploy') {
      deploy = true;
    } else if (arg === '--rate') {
      rate = positive(arg, argv[++i]);
    } else if (arg === '--seconds') {
      seconds = positive(arg, argv[++i]);
    } else if (arg === '--xml') {
      const engine = argv[++i];
      if (engine !== 'fast' && engine !== 'builder') throw new Error('--xml takes fast or builder');
      env.VIDFEEDS_XML_ENGINE = engine;
    } else {
      throw new Error(`unknown option ${arg}; options: --users <n,...>, --shape demo,feed-heavy, --only <formats>, --keep, --pairs <n>, --xml fast|builder, --freshness [--rate <n>] [--seconds <n>] [--mix mixed|titles] [--sync-every <s>], --deploy`);
    }
  }
  if (syncEvery !== null && freshness === null) throw new Error('--sync-every goes with --freshness');
  if (freshness !== null) freshness = { rate, seconds, syncEvery, mix };
  // The deploy run's size unless --users says otherwise: the store writes each object as files.
  if (deploy && !argv.includes('--users')) users = [10_000];
  return { users, shapes, only, keep, pairs, freshness, deploy, env };
}

/** The cached demo database of `users` users of a shape; made when missing or when the generator changed. */
function demoDatabase(users: number, shape: DemoShape): { file: string; made: boolean; seconds: number } {
  const generator = readFileSync(join(ROOT, 'dist/db/demo-data.js'));
  const migrations = readFileSync(join(ROOT, 'dist/db/migrations.js'));
  const key = createHash('sha1').update(generator).update(migrations).digest('hex').slice(0, 10);
  const file = join(CACHE, `${shape}-${users}-${key}.sqlite`);
  if (existsSync(file)) return { file, made: false, seconds: 0 };
  for (const old of readdirSync(CACHE).filter((f) => f.startsWith(`${shape}-${users}-`))) rmSync(join(CACHE, old), { force: true });
  const started = process.hrtime.bigint();
  const temp = `${file}.tmp-${process.pid}`;
  const { db } = openForWriting(temp);
  try {
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    generateDemo(db, { users, seed: 1, shape });
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
  renameSync(temp, file);
  return { file, made: true, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

/** Runs a child process to completion; wall time measured from here, from spawn to exit. */
function runChild(script: string, args: string[], env: Record<string, string> = {}): Promise<ChildResult> {
  return new Promise((resolvePromise, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [script, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const line = stdout.split('\n').find((l) => l.startsWith('BENCH '));
      if (code !== 0 || line === undefined) {
        reject(new Error(`${script} ${args.join(' ')} exited with ${code}:\n${stderr.slice(-4000)}`));
        return;
      }
      const report = JSON.parse(line.slice('BENCH '.length)) as Record<string, unknown>;
      resolvePromise({ seconds, maxRssKb: Number(report.maxRssKb), stdout, stderr, report });
    });
  });
}

function buildArgs(db: string, out: string, extra: string[] = []): string[] {
  return ['build', '--db', db, '--out', out, '--state', `${out}.state.sqlite`, ...extra];
}

/**
 * Reads a file once from start to end, so its pages are in the page cache: a run of the 100,000-user
 * feed-heavy site found 771 MB of its 2.2 GB database there after the runs before it (on a
 * 23.5 GiB machine), and timed reading the rest from the disk, which the floor never does.
 */
function readThrough(file: string): void {
  const fd = openSync(file, 'r');
  try {
    const chunk = Buffer.allocUnsafe(16 * 1024 * 1024);
    while (readSync(fd, chunk, 0, chunk.length, null) > 0);
  } finally {
    closeSync(fd);
  }
}

/**
 * The CPU a child used, user and system, and in cores over its wall time: a build on two cores is
 * bound by its CPU when that nears 2, and the floor's is nearly all the kernel's.
 */
function cpuOf({ seconds, report }: ChildResult): string {
  const user = Number(report.userMs) / 1000;
  const system = Number(report.systemMs) / 1000;
  return `${user.toFixed(2)} s user + ${system.toFixed(2)} s system (${((user + system) / seconds).toFixed(2)} cores)`;
}

/** The "N documents in ..." summary the CLI prints. */
function documentsOf(result: ChildResult): number {
  const match = /(\d+) documents in/.exec(result.stderr);
  if (!match) throw new Error(`no build summary in:\n${result.stderr.slice(-2000)}`);
  return Number(match[1]);
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
const n = (value: number) => Math.round(value).toLocaleString('en-US');
/** The middle value; for an even count, the mean of the two middle ones. */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const half = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[half]! : (sorted[half - 1]! + sorted[half]!) / 2;
}

const s = (seconds: number) => `${seconds.toFixed(2)} s`.padStart(9);
const mark = (ok: boolean) => (ok ? 'ok' : 'MISSED');

async function benchSize(users: number, shape: DemoShape, only: string[] | undefined, pairs: number, runDir: string, env: Record<string, string>, lines: (line: string) => void): Promise<void> {
  const demo = demoDatabase(users, shape);
  // Only the full run edits its database (oneVideoEdit), so only it builds from a copy. Copying
  // the feed-heavy database (1.2 GB at 50,000 users) and deleting the copy after the run kept
  // this project's disk, mounted with `discard`, creating files 15 times slower for minutes.
  const db = only === undefined ? join(runDir, 'site.sqlite') : demo.file;
  if (only === undefined) copyFileSync(demo.file, db);
  const counts = new Database(db, { readonly: true });
  const videos = (counts.prepare('SELECT count(*) AS n FROM videos').get() as { n: number }).n;
  counts.close();
  const scope = only === undefined ? '' : `, --only ${only.join(',')}`;
  lines(`== ${shape}: ${n(users)} users, ${n(videos)} videos${scope} (demo database ${demo.made ? `generated in ${demo.seconds.toFixed(1)} s` : 'cached'}: ${db.replace(`${ROOT}/`, '')})`);

  // ext4 allocates inodes slowly for minutes after a large delete, so the full build and its floor
  // are timed in the same conditions: each creates a fresh tree, with nothing deleted in between.
  // The floor writes the bytes of the full build, packed into one file first (untimed).
  const out = join(runDir, 'full');
  // The floor reads its bytes from a pack just written (in the page cache): the build reads its
  // database from there too, not partly from the disk as the runs before evicted it.
  readThrough(db);
  await quietDisk(lines);
  const onlyArgs = only === undefined ? [] : ['--only', only.join(',')];
  const full = await runChild(CLI_CHILD, buildArgs(db, out, onlyArgs), env);
  const documents = documentsOf(full);
  const pack = join(runDir, 'pack');
  const packed = packTree(out, pack);
  const rssMb = full.maxRssKb / 1024;
  const rssTarget = PEAK_RSS_MB[shape];
  lines(`full build          ${s(full.seconds)}   ${n(documents / full.seconds).padStart(7)} documents/s   ${mb(packed.bytes)} MB written in ${n(packed.files)} files   peak RSS ${rssMb.toFixed(0)} MB (target < ${rssTarget} MB: ${mark(rssMb < rssTarget)})`);
  await quietDisk(lines);
  const floor = await runChild(FLOOR_CHILD, [pack, join(runDir, 'floor')]);
  // More pairs, each a build and then its floor into fresh trees, nothing deleted in between.
  const more: Array<{ full: ChildResult; floor: ChildResult }> = [];
  for (let pair = 2; pair <= pairs; pair++) {
    // Read through again: the trees written since may have pushed the database out of the cache.
    readThrough(db);
    await quietDisk(lines);
    const again = await runChild(CLI_CHILD, buildArgs(db, join(runDir, `full-${pair}`), onlyArgs), env);
    await quietDisk(lines);
    more.push({ full: again, floor: await runChild(FLOOR_CHILD, [pack, join(runDir, `floor-${pair}`)]) });
  }
  rmSync(`${pack}.data`, { force: true });

  // A build of some formats is partial: it never follows from a change position, so there is no
  // incremental build to time after it, and `check` would find the other formats missing.
  if (only === undefined) {
    await quietDisk(lines);
    const again = await runChild(CLI_CHILD, buildArgs(db, out), env);
    const ratio = again.seconds / full.seconds;
    lines(`no-change rebuild   ${s(again.seconds)}   ${ratio.toFixed(2)} of full (target ≤ ${TARGETS.noChangeOverFull}: ${mark(ratio <= TARGETS.noChangeOverFull)})   peak RSS ${(again.maxRssKb / 1024).toFixed(0)} MB`);
    lines(`one-video edit      ${await oneVideoEdit(db, out, env)}`);

    // vidfeeds check reads every file back, hashes it, parses it and validates it against its schema.
    settleDisk();
    const checked = await runChild(CLI_CHILD, ['check', '--out', out, '--state', `${out}.state.sqlite`, '--db', db], env);
    lines(`check --db          ${s(checked.seconds)}   ${n(documents / checked.seconds).padStart(7)} documents/s   ${checked.stderr.trim().split('\n').pop()?.replace(/^vidfeeds: /, '') ?? ''}   peak RSS ${(checked.maxRssKb / 1024).toFixed(0)} MB`);
  }

  const overFloor = full.seconds / floor.seconds;
  const target = fullOverFloorTarget(shape, users);
  lines(`floor               ${s(floor.seconds)}   the same ${n(packed.files)} files, write-beside-and-rename only`);
  if (more.length === 0) {
    lines(`full / floor        ${overFloor.toFixed(2).padStart(7)}     (target ≤ ${target}: ${mark(overFloor <= target)})`);
  } else {
    for (const [i, pair] of more.entries()) {
      lines(`pair ${i + 2}              build ${s(pair.full.seconds)}, floor ${s(pair.floor.seconds)}: ${(pair.full.seconds / pair.floor.seconds).toFixed(2)}   peak RSS ${(pair.full.maxRssKb / 1024).toFixed(0)} MB`);
    }
    const ratios = [overFloor, ...more.map((pair) => pair.full.seconds / pair.floor.seconds)];
    const middle = median(ratios);
    lines(`full / floor        ${middle.toFixed(2).padStart(7)}     median of ${ratios.length} pairs (${ratios.map((ratio) => ratio.toFixed(2)).join(', ')}; target ≤ ${target}: ${mark(middle <= target)})`);
    const peak = Math.max(full.maxRssKb, ...more.map((pair) => pair.full.maxRssKb)) / 1024;
    lines(`peak RSS            ${peak.toFixed(0)} MB, the highest of ${ratios.length} builds (target < ${rssTarget} MB: ${mark(peak < rssTarget)})`);
  }
  lines(`cpu                 build ${cpuOf(full)}; floor ${cpuOf(floor)}`);

  if (only === undefined) await compressedBuild(db, runDir, full.seconds, floor.seconds, env, lines);
}

/**
 * The same full build with `"compress": ["gzip", "br"]`, into a fresh tree, against the build
 * without and against two floors: the uncompressed tree's and its own (the same files and forms,
 * write-beside-and-rename only). Then what the forms save a client that takes gzip or br.
 */
async function compressedBuild(db: string, runDir: string, plainSeconds: number, plainFloorSeconds: number, env: Record<string, string>, lines: (line: string) => void): Promise<void> {
  const config = join(runDir, 'compress.config.json');
  writeFileSync(config, JSON.stringify({ compress: ['gzip', 'br'] }));
  const out = join(runDir, 'compressed');
  readThrough(db);
  settleDisk();
  const built = await runChild(CLI_CHILD, buildArgs(db, out, ['--config', config]), env);
  const pack = join(runDir, 'pack-compressed');
  const packed = packTree(out, pack);
  settleDisk();
  const floor = await runChild(FLOOR_CHILD, [pack, join(runDir, 'floor-compressed')]);
  rmSync(`${pack}.data`, { force: true });
  const sizes = formSizes(out);
  const saved = (bytes: number) => `${mb(sizes.documents - bytes)} MB of ${mb(sizes.documents)} MB (${((1 - bytes / sizes.documents) * 100).toFixed(0)}%)`;
  lines(`compressed build    ${s(built.seconds)}   gzip and br beside each document: ${n(packed.files)} files, ${mb(packed.bytes)} MB   peak RSS ${(built.maxRssKb / 1024).toFixed(0)} MB`);
  lines(`  / full build      ${(built.seconds / plainSeconds).toFixed(2).padStart(7)}     / floor without forms ${(built.seconds / plainFloorSeconds).toFixed(2)}`);
  lines(`  its floor         ${s(floor.seconds)}   compressed / its floor ${(built.seconds / floor.seconds).toFixed(2)}`);
  lines(`  bytes saved       gzip ${saved(sizes.gzip)}, br ${saved(sizes.br)} for a client that fetches every document`);
}

/** Bytes of the documents of a tree and of their .gz and .br forms. */
function formSizes(root: string): { documents: number; gzip: number; br: number } {
  const sizes = { documents: 0, gzip: 0, br: 0 };
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.gz')) sizes.gzip += statSync(full).size;
      else if (entry.name.endsWith('.br')) sizes.br += statSync(full).size;
      else sizes.documents += statSync(full).size;
    }
  };
  walk(root);
  return sizes;
}

/**
 * What a run needs on disk per user, from a 10,000-user demo run (2026-11-21: two trees, the
 * build's and the floor's, of 42 inodes and 178 KB each, and the pack, with a margin), scaled by
 * what a user of the shape publishes: nearly every file has a folder of its own (a user's folder,
 * one per user format; a video's folder and its oembed/ holding its four files), and every file
 * and folder takes a 4 KB block. The compressed trees (two forms beside each document, about 4 KB
 * each on disk: 70 inodes and 300 KB per demo user, estimated from a 300-user run) double it.
 */
const VIDEOS_PER_USER: Record<DemoShape, number> = { demo: 5, 'feed-heavy': 25 };

function needsPerUser(shape: DemoShape, only: string[] | undefined, freshness: boolean): { inodes: number; bytes: number } {
  const chosen = FORMATS.filter((format) => only === undefined || only.includes(format.name));
  const userFormats = chosen.filter((format) => format.scope === 'user').length;
  const videoFiles = chosen.filter((format) => format.scope === 'video').length;
  const perTree = (userFormats > 0 ? 1 + 2 * userFormats : 0) + (videoFiles > 0 ? VIDEOS_PER_USER[shape] * (2 + videoFiles) : 0);
  // Two trees, two compressed trees of about as many inodes again, and a margin; a block per
  // inode, and the pack about as large again. The freshness run makes two plain trees (the
  // watched one and the full build it is compared with) and no pack.
  const inodes = Math.ceil(perTree * 2 * (only === undefined && !freshness ? 2 : 1) * 1.1);
  return { inodes, bytes: inodes * 4096 * (freshness ? 1.1 : 1.5) };
}

/** Stops before building when the file system cannot hold the run: it fails hours in otherwise. */
function checkRoom(users: number[], shapes: DemoShape[], only: string[] | undefined, pairs: number, staleRuns: boolean, freshness: boolean): void {
  const fs = statfsSync(RUNS);
  let inodes = 0;
  let bytes = 0;
  for (const shape of shapes) {
    const needs = needsPerUser(shape, only, freshness);
    for (const count of users) {
      // Each pair beyond the first makes another build's tree and floor's tree.
      inodes += count * needs.inodes * pairs;
      bytes += count * needs.bytes * pairs;
    }
  }
  const short: string[] = [];
  if (fs.ffree < inodes) short.push(`${n(inodes)} inodes (${n(fs.ffree)} free)`);
  if (fs.bavail * fs.bsize < bytes) short.push(`${(bytes / 1e9).toFixed(0)} GB (${((fs.bavail * fs.bsize) / 1e9).toFixed(0)} GB free)`);
  if (short.length === 0) return;
  const hint = staleRuns ? ` (the trees of an earlier run, under ${RUNS}, are removed only after this run: remove them first)` : '';
  const sizes = users.map(n).join(' and ');
  throw new Error(`${sizes} users of ${shapes.join(' and ')} shape${only === undefined ? '' : ` (--only ${only.join(',')})`} need about ${short.join(' and ')} on the file system of ${RUNS}${hint}; fewer users, one shape or --only fewer formats need less`);
}

/**
 * Writes every dirty page to disk before a timed phase: otherwise the kernel is still writing back
 * what came before (the 5.7 GB pack, the tree of the full build) while the next phase runs, and
 * the floor measured after the pack reads high. `sync(1)`; where there is none, nothing.
 */
function settleDisk(): void {
  try {
    execFileSync('sync', { stdio: 'ignore' });
  } catch {
    // No sync command: the phases are timed as they come.
  }
}

/**
 * Before a timed phase: every dirty page written (sync), then the file system's own measure of how
 * busy it is (disk-probe.ts). A run refuses to time while it stays busy.
 */
async function quietDisk(lines: (line: string) => void): Promise<void> {
  settleDisk();
  // The probes' files stay until the run's timings are over (disk-probe.ts), removed with its trees.
  await waitForQuietDisk(RUNS, DISK_BASELINE, lines, { keepProbes: true });
}

/** The freshness run on a copy of the demo database of `users` users. */
async function freshnessSize(users: number, runDir: string, options: BenchOptions, lines: (line: string) => void): Promise<void> {
  const demo = demoDatabase(users, 'demo');
  const db = join(runDir, 'site.sqlite');
  copyFileSync(demo.file, db);
  const through = options.freshness!.syncEvery === null ? '' : `, committed to a site database of its own and synced every ${options.freshness!.syncEvery} s`;
  lines(`== freshness, ${n(users)} users${through} (demo database ${demo.made ? `generated in ${demo.seconds.toFixed(1)} s` : 'cached'})`);
  await benchFreshness({
    db,
    runDir,
    cliChild: CLI_CHILD,
    writerScript: WRITER,
    rate: options.freshness!.rate,
    seconds: options.freshness!.seconds,
    mix: options.freshness!.mix,
    syncEvery: options.freshness!.syncEvery,
    env: options.env,
    runCli: (args) => runChild(CLI_CHILD, args, options.env),
    quietDisk: () => quietDisk(lines),
    lines,
  });
}

/** Edits one video in the run's copy of the database and builds again into the same tree with the same state. */
async function oneVideoEdit(db: string, out: string, env: Record<string, string>): Promise<string> {
  const site = new Database(db);
  site.prepare(`UPDATE videos SET title = title || ' (edited)' WHERE id = (SELECT min(id) FROM videos WHERE visibility = 'public')`).run();
  site.close();
  const edit = await runChild(CLI_CHILD, buildArgs(db, out), env);
  return `${s(edit.seconds)}   (target < ${TARGETS.oneVideoSeconds} s: ${mark(edit.seconds < TARGETS.oneVideoSeconds)})   peak RSS ${(edit.maxRssKb / 1024).toFixed(0)} MB`;
}

/**
 * How long after a large delete the bench waits before it times anything. ext4 without a journal
 * (this project's disks) reuses no inode freed less than 60 s ago, or 360 s ago while the block
 * of the inode table holding it is unwritten (`recently_deleted` in the kernel's fs/ext4/ialloc.c):
 * creating files walks past each of them. Right after a run deleted its trees, a floor of 3.9 s
 * took 17 s, 60% of it in that walk (perf), and the disk probe's few files did not notice.
 */
const DELETE_SETTLES_S = 390;

/**
 * One run at a time on a cache: two runs share the disk and the trees' folder, and each would time
 * the other's writes and remove its trees. Held until the process exits; a lock whose process is
 * gone (a run killed by a signal) is taken over.
 */
function benchLock(): BuildLock {
  try {
    return acquireBuildLock(RUNS, { command: 'npm run bench', leaseSeconds: 0 });
  } catch (error) {
    if (!(error instanceof LockHeldError) || error.holder === null) throw error;
    throw new Error(`another bench is running (${describeHolder(error.holder)}): two runs at once time each other's writes; wait for it to end`);
  }
}

async function benchMain(): Promise<void> {
  const lock = benchLock();
  process.on('exit', () => lock.release());
  // `--sync` times `vidfeeds sync` from real database servers instead (sync-bench.ts).
  if (process.argv.includes('--sync')) return (await import('./sync-bench.js')).syncBenchMain(process.argv.slice(2));
  const options = parseArgs(process.argv.slice(2));
  const { users, shapes, only, keep, env } = options;
  mkdirSync(RUNS, { recursive: true });
  const stale = readdirSync(RUNS).map((name) => join(RUNS, name));
  const started = new Date();
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  console.log(`vidfeeds bench${env.VIDFEEDS_XML_ENGINE === 'builder' ? ' (xml: builder)' : ''}, ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC: node ${process.version}, ${cpus().length} cores (${cpu}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB`);
  const lastCleanup = join(CACHE, 'last-cleanup');
  if (existsSync(lastCleanup)) {
    const ago = (Date.now() - statSync(lastCleanup).mtimeMs) / 1000;
    if (ago < DELETE_SETTLES_S) {
      console.log(`waiting ${Math.ceil(DELETE_SETTLES_S - ago)} s: the previous run deleted its trees ${ago.toFixed(0)} s ago, and ext4 creates files slowly until its freed inodes are ${DELETE_SETTLES_S} s old`);
      await new Promise((resolve) => setTimeout(resolve, (DELETE_SETTLES_S - ago) * 1000));
    }
  }
  // Before the try: a run that cannot start must not spend minutes removing earlier trees first.
  checkRoom(users, options.freshness !== null || options.deploy ? ['demo'] : shapes, only, options.pairs, stale.length > 0, options.freshness !== null);
  const mine: string[] = [];
  try {
    for (const count of users) {
      if (options.deploy) {
        const runDir = join(RUNS, `deploy-${count}-${started.getTime()}`);
        mkdirSync(runDir, { recursive: true });
        mine.push(runDir);
        const demo = demoDatabase(count, 'demo');
        console.log(`== deploy, ${n(count)} users (demo database ${demo.made ? `generated in ${demo.seconds.toFixed(1)} s` : 'cached'})`);
        await benchDeploy({
          users: count,
          demoDb: demo.file,
          runDir,
          storeScript: STORE_CHILD,
          runCli: async (args, extra) => {
            const result = await runChild(CLI_CHILD, args, { ...env, ...extra });
            return { seconds: result.seconds, stdout: result.stdout, stderr: result.stderr, maxRssKb: result.maxRssKb };
          },
          lines: (line) => console.log(line),
        });
        continue;
      }
      if (options.freshness !== null) {
        const runDir = join(RUNS, `${count}-${started.getTime()}`);
        mkdirSync(runDir, { recursive: true });
        mine.push(runDir);
        await freshnessSize(count, runDir, options, (line) => console.log(line));
        continue;
      }
      for (const shape of shapes) {
        const runDir = join(RUNS, `${shape}-${count}-${started.getTime()}`);
        mkdirSync(runDir, { recursive: true });
        mine.push(runDir);
        await benchSize(count, shape, only, options.pairs, runDir, env, (line) => console.log(line));
      }
    }
  } finally {
    // Only now, after every timing: this run's trees (unless --keep), its probes' files and any an
    // earlier run left.
    let removed = false;
    const probes = readdirSync(RUNS).filter((name) => name.startsWith(PROBE_FOLDER_PREFIX)).map((name) => join(RUNS, name));
    for (const dir of new Set([...stale, ...probes, ...(keep ? [] : mine)])) {
      if (existsSync(dir) && statSync(dir).isDirectory()) {
        rmSync(dir, { recursive: true, force: true });
        removed = true;
      }
    }
    // The next run warns about a recent delete only when there was one.
    if (removed) writeFileSync(lastCleanup, `${new Date().toISOString()}\n`);
  }
}

benchMain().catch((error: unknown) => {
  console.error(`bench: ${(error as Error).message}`);
  process.exitCode = 1;
});
