import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateDemo, type DemoShape } from '../db/demo-data.js';
import { openForWriting } from '../db/open-database.js';
import { acquireBuildLock, describeHolder, LockHeldError, type BuildLock } from '../lock/lock.js';
import { checkRoom, DELETE_SETTLES_S, quietDisk, readThrough, settleDisk } from './bench-disk.js';
import { parseArgs, type BenchOptions } from './bench-options.js';
import { PROBE_FOLDER_PREFIX } from './disk-probe.js';
import { benchDeploy } from './deploy-bench.js';
import { benchFreshness } from './freshness.js';
import { benchLiveDeploy } from './live-deploy.js';
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
 *   npm run bench -- --xml builder     render every document but the feeds (markup of their own,
 *                                      rss.ts, atom.ts) through xmlbuilder2's DOM (the figures before the
 *                                      fast paths of src/render/xml.ts)
 *   npm run bench -- --freshness       instead: the time from a commit to its documents in place
 *                                      while `vidfeeds watch` runs (freshness.ts); --rate <changes
 *                                      per second> (20), --seconds <n> (60) and --mix mixed|titles
 *                                      (every kind of change, or title edits alone) shape the writer;
 *                                      --sync-every <s>: the writer commits to a site database of
 *                                      its own, which watch syncs from every s seconds
 *   npm run bench -- --deploy          instead: `vidfeeds deploy` of a built tree to a local store
 *                                      (deploy-bench.ts), s3rver, or the RADOS Gateway with
 *                                      --store radosgw
 *   npm run bench -- --sync            instead: `vidfeeds sync` from MariaDB and PostgreSQL servers
 *                                      it starts (sync-bench.ts); --servers, --pairs, and
 *                                      --baseline DIR to time another built checkout beside it
 *   npm run bench -- --freshness --deploy   instead: the time from a commit to its objects in a
 *                                      local store and its feeds' hub pings while `vidfeeds watch
 *                                      --deploy` runs (live-deploy.ts), with the writer above;
 *                                      --store radosgw as for --deploy
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
  // the feed-heavy database and deleting the copy after the run keeps a disk mounted with
  // `discard` creating files slowly for minutes (docs/performance.md).
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
  await quietDisk(RUNS, DISK_BASELINE, lines);
  const onlyArgs = only === undefined ? [] : ['--only', only.join(',')];
  const full = await runChild(CLI_CHILD, buildArgs(db, out, onlyArgs), env);
  const documents = documentsOf(full);
  const pack = join(runDir, 'pack');
  const packed = packTree(out, pack);
  const rssMb = full.maxRssKb / 1024;
  const rssTarget = PEAK_RSS_MB[shape];
  lines(`full build          ${s(full.seconds)}   ${n(documents / full.seconds).padStart(7)} documents/s   ${mb(packed.bytes)} MB written in ${n(packed.files)} files   peak RSS ${rssMb.toFixed(0)} MB (target < ${rssTarget} MB: ${mark(rssMb < rssTarget)})`);
  await quietDisk(RUNS, DISK_BASELINE, lines);
  const floor = await runChild(FLOOR_CHILD, [pack, join(runDir, 'floor')]);
  // More pairs, each a build and then its floor into fresh trees, nothing deleted in between.
  const more: Array<{ full: ChildResult; floor: ChildResult }> = [];
  for (let pair = 2; pair <= pairs; pair++) {
    // Read through again: the trees written since may have pushed the database out of the cache.
    readThrough(db);
    await quietDisk(RUNS, DISK_BASELINE, lines);
    const again = await runChild(CLI_CHILD, buildArgs(db, join(runDir, `full-${pair}`), onlyArgs), env);
    await quietDisk(RUNS, DISK_BASELINE, lines);
    more.push({ full: again, floor: await runChild(FLOOR_CHILD, [pack, join(runDir, `floor-${pair}`)]) });
  }
  rmSync(`${pack}.data`, { force: true });

  // A build of some formats is partial: it never follows from a change position, so there is no
  // incremental build to time after it, and `check` would find the other formats missing.
  if (only === undefined) {
    await quietDisk(RUNS, DISK_BASELINE, lines);
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
    quietDisk: () => quietDisk(RUNS, DISK_BASELINE, lines),
    lines,
  });
}

/** The freshness of `watch --deploy` (live-deploy.ts) on a copy of the demo database of `users` users. */
async function liveDeploySize(users: number, runDir: string, options: BenchOptions, env: Record<string, string>, lines: (line: string) => void): Promise<void> {
  const demo = demoDatabase(users, 'demo');
  const db = join(runDir, 'site.sqlite');
  copyFileSync(demo.file, db);
  lines(`== watch --deploy, ${n(users)} users (demo database ${demo.made ? `generated in ${demo.seconds.toFixed(1)} s` : 'cached'})`);
  await benchLiveDeploy({
    db,
    runDir,
    cliChild: CLI_CHILD,
    writerScript: WRITER,
    storeScript: STORE_CHILD,
    store: options.store,
    rate: options.freshness!.rate,
    seconds: options.freshness!.seconds,
    mix: options.freshness!.mix,
    env,
    runCli: (args, extra) => runChild(CLI_CHILD, args, { ...env, ...extra }),
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
  const run = options.freshness !== null ? 'freshness' : options.deploy ? 'deploy' : 'build';
  checkRoom(RUNS, users, run === 'build' ? shapes : ['demo'], only, run === 'build' ? options.pairs : 1, stale.length > 0, run);
  const mine: string[] = [];
  try {
    for (const count of users) {
      if (options.deploy && options.freshness !== null) {
        const runDir = join(RUNS, `live-deploy-${count}-${started.getTime()}`);
        mkdirSync(runDir, { recursive: true });
        mine.push(runDir);
        await liveDeploySize(count, runDir, options, env, (line) => console.log(line));
        continue;
      }
      if (options.deploy) {
        const runDir = join(RUNS, `deploy-${count}-${started.getTime()}`);
        mkdirSync(runDir, { recursive: true });
        mine.push(runDir);
        const demo = demoDatabase(count, 'demo');
        console.log(`== deploy, ${n(count)} users (demo database ${demo.made ? `generated in ${demo.seconds.toFixed(1)} s` : 'cached'})`);
        await benchDeploy({
          users: count,
          store: options.store,
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
        // A probe's few files leave nothing for file creation to walk past; a tree does.
        if (!basename(dir).startsWith(PROBE_FOLDER_PREFIX)) removed = true;
      }
    }
    // The next run waits after a recent delete of a tree only.
    if (removed) writeFileSync(lastCleanup, `${new Date().toISOString()}\n`);
  }
}

benchMain().catch((error: unknown) => {
  console.error(`bench: ${(error as Error).message}`);
  process.exitCode = 1;
});
