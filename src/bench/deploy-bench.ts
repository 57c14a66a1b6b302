import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, opendirSync, readdirSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { boto3Missing, uploadWithBoto3, writeUploadList } from './boto3-witness.js';
import { DEFAULT_BLOCK_BYTES, startRadosgw } from './radosgw.js';

/**
 * `npm run bench -- --deploy [--users N] [--store s3rver|radosgw]`: a built tree of N demo users
 * deployed to a local S3-compatible store (s3rver in a process of its own, or Ceph's RADOS Gateway
 * over a single-node cluster on loopback, src/bench/radosgw.ts) through `vidfeeds deploy`, as a user's
 * S3 is reached (endpoint override, path-style): the first deploy (objects per second, a full
 * compare), a build and deploy with nothing changed (incremental: 0 uploads, no listing), a
 * one-video edit built and deployed (uploads = the objects of the files whose bytes changed),
 * and a `--verify` deploy (the full compare of tree and listing) beside what its two halves cost
 * alone: the store's listing of the prefix and a read of every file of the tree. Beside the first deploy, boto3
 * uploads the same objects at the same concurrency (boto3-witness.ts), when python3-boto3 is
 * installed, for the ratio of the two rates. The rates measure the store as much as vidfeeds (s3rver
 * stores each object as files of its own; the gateway, in a BlueStore file); the counts are what
 * the bench checks.
 */

/** Where the bench deploys to. */
export type BenchStoreKind = 's3rver' | 'radosgw';

export interface DeployBenchInput {
  users: number;
  store: BenchStoreKind;
  demoDb: string;
  runDir: string;
  /** `dist/bench/s3rver-child.js`. */
  storeScript: string;
  /** Runs a vidfeeds command in a child process with extra environment; resolves with its time and output. */
  runCli: (args: string[], env: Record<string, string>) => Promise<{ seconds: number; stdout: string; stderr: string; maxRssKb: number }>;
  lines: (line: string) => void;
}

export const BUCKET = 'site';
export const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' };
export type Credentials = typeof CREDENTIALS;

/** A running store with the bench's bucket: its endpoint, the keys the deploy signs with, and how to stop it. */
export interface BenchStore {
  endpoint: string;
  credentials: Credentials;
  stop(): Promise<void>;
}
/** Requests at once, of the deploy and of boto3 beside it (the deploy's default). */
const CONCURRENCY = 16;
/** boto3 uploads the objects of every document up to this many users, of every N-th past it (its rate is what counts). */
const BOTO3_USERS = 10_000;
/** The most the plain upload's rate may exceed the first deploy's. */
const PLAIN_OVER_DEPLOY = 1.2;
/** The most a `--verify` deploy with nothing to do may take over listing the store and reading the tree. */
const VERIFY_OVER_FLOOR = 1.5;

export async function benchDeploy(input: DeployBenchInput): Promise<void> {
  const { runDir, lines } = input;
  const db = join(runDir, 'site.sqlite');
  const out = join(runDir, 'out');
  copyFileSync(input.demoDb, db);
  const build = await input.runCli(['build', '--db', db, '--out', out, '--json', '--no-notify'], {});
  lines(`  build: ${build.seconds.toFixed(1)} s`);
  const store = await startBenchStore(input.store, input.storeScript, join(runDir, 'store'), input.users);
  lines(`  store: ${input.store} at ${store.endpoint}`);
  const { endpoint, credentials } = store;
  try {
    const deploy = async (what: string, extra: string[] = []) => {
      const result = await input.runCli(['deploy', '--out', out, '--to', `s3://${BUCKET}/site`, '--endpoint', endpoint, '--json', '--no-notify', '--concurrency', String(CONCURRENCY), ...extra], credentials);
      const report = JSON.parse(result.stdout.split('\n').find((l) => l.startsWith('{'))!) as {
        mode: string;
        counts: { objects: number; uploaded: number; uploadedNew: number; uploadedChanged: number; uploadedSite: number; deleted: number; unchanged: number; checked: number };
        unorderedListing: unknown;
        uploaded: string[];
      };
      const { objects, uploaded, deleted } = report.counts;
      // New: absent from the store's listing; changed: listed with other bytes; site: the site-wide files.
      const split = uploaded > 0 ? ` (new ${report.counts.uploadedNew}, changed ${report.counts.uploadedChanged}, site ${report.counts.uploadedSite})` : '';
      lines(
        `  ${what.padEnd(22)} ${report.mode.padEnd(11)} ${result.seconds.toFixed(1).padStart(7)} s   ${String(objects).padStart(8)} objects   ${String(uploaded).padStart(8)} uploaded   ${String(deleted).padStart(5)} deleted` +
          `   peak RSS ${(result.maxRssKb / 1024).toFixed(0)} MB` +
          (uploaded > 0 ? `   ${(uploaded / result.seconds).toFixed(0)} objects/s${split}` : '') +
          // s3rver pages its listing by walking its folders, not in key order, and can leave keys
          // out at a page's edge: the deploy then asks for each object the listing lacks.
          (report.counts.checked > 0 ? `   ${report.counts.checked} asked (HEAD)${report.unorderedListing === null ? '' : ': listing out of key order'}` : ''),
      );
      return { ...report.counts, keys: report.uploaded, seconds: result.seconds };
    };
    const first = await deploy('first deploy');
    await besideFirstDeploy({ users: input.users, out, runDir, endpoint, credentials, deployRate: first.uploaded / first.seconds, lines });
    const rebuilt = await input.runCli(['build', '--db', db, '--out', out, '--json', '--no-notify'], {});
    lines(`  build, nothing changed: ${rebuilt.seconds.toFixed(1)} s`);
    const unchanged = await deploy('no-change deploy');
    if (unchanged.uploaded !== 0 || unchanged.deleted !== 0) {
      lines(`  !! the no-change deploy wrote ${unchanged.uploaded} and deleted ${unchanged.deleted} objects: it should write and delete none`);
    }
    const site = new Database(db);
    site.prepare(`UPDATE videos SET title = title || ' (edited)' WHERE id = (SELECT min(id) FROM videos WHERE visibility = 'public')`).run();
    site.close();
    const edit = await input.runCli(['build', '--db', db, '--out', out, '--json', '--no-notify'], {});
    lines(`  build after the edit: ${edit.seconds.toFixed(1)} s`);
    const built = JSON.parse(edit.stdout.split('\n').find((l) => l.startsWith('{'))!) as { urls: { written: string[] } };
    // Each URL the build rewrote, as the keys it is stored under: a directory URL also without its slash.
    const expected = new Set(
      built.urls.written.flatMap((url) => {
        const key = `site/${decodeURIComponent(new URL(url).pathname.slice(1))}`;
        return key.endsWith('/') ? [key, key.slice(0, -1)] : [key];
      }),
    );
    const counts = await deploy('one-edit deploy');
    const same = counts.keys.length === expected.size && counts.keys.every((key) => expected.has(key));
    lines(
      `  the edit rewrote ${built.urls.written.length} files (${expected.size} keys); the deploy uploaded ${counts.uploaded} objects: ` +
        (same ? 'exactly those keys' : `!! not those keys (uploaded ${JSON.stringify([...counts.keys].sort())}, expected ${JSON.stringify([...expected].sort())})`),
    );
    // The tree and the gateway's bucket index read once, untimed: the --verify deploy and its floor
    // then both meet them warm (after the runs above, the first to read would otherwise pay for both).
    await listingAndReading(out, endpoint, credentials);
    const verified = await deploy('--verify deploy', ['--verify']);
    if (verified.uploaded !== 0 || verified.deleted !== 0) lines(`  !! --verify after the incremental deploys wrote ${verified.uploaded} and deleted ${verified.deleted} objects: the store differed from the tree`);
    const floor = await listingAndReading(out, endpoint, credentials);
    const total = floor.listSeconds + floor.readSeconds;
    const ratio = verified.seconds / total;
    lines(
      `  listing + reading      floor       ${total.toFixed(1).padStart(7)} s   ${String(floor.listed).padStart(8)} listed    ${String(floor.files).padStart(8)} files read (${(floor.bytes / 2 ** 20).toFixed(0)} MiB)` +
        `   listing ${floor.listSeconds.toFixed(1)} s, reading ${floor.readSeconds.toFixed(1)} s: --verify ${ratio.toFixed(2)}× (target ≤ ${VERIFY_OVER_FLOOR}: ${ratio <= VERIFY_OVER_FLOOR ? 'yes' : 'NO'})`,
    );
  } finally {
    await store.stop();
  }
}

/**
 * What the gateway's BlueStore file takes a demo user, and the file's length a user: sparse, it
 * takes only what is written. An object takes more as the store grows (its index and metadata
 * compact less): 10,000 users' 458,684 objects filled about 4.7 GB (10 KB each), the first 2.77
 * million objects of 100,000 users 42 GB (15 KB each, 0.7 MB a user at 46 objects a user).
 */
const GATEWAY_BYTES_PER_USER = 800_000;
const GATEWAY_BLOCK_PER_USER = 1024 ** 2;

/**
 * Starts the store in `directory` (s3rver's files; the gateway keeps its cluster in a temporary
 * folder of its own, sized for `users`) with the bench's bucket.
 */
export async function startBenchStore(kind: BenchStoreKind, script: string, directory: string, users = 10_000): Promise<BenchStore> {
  if (kind === 's3rver') {
    mkdirSync(directory, { recursive: true });
    const { child, port } = await startStore(script, directory);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const stop = async () => {
      child.kill('SIGTERM');
      await exited;
    };
    return { endpoint: `http://127.0.0.1:${port}`, credentials: CREDENTIALS, stop };
  }
  // BlueStore keeps the objects in a sparse file; memstore would hold them in memory, up to 1 GiB.
  // Refused at once where the disk could not hold them, not after an hour of uploads.
  const { bavail, bsize } = statfsSync(tmpdir());
  const needed = users * GATEWAY_BYTES_PER_USER;
  if (bavail * bsize < needed) {
    throw new Error(`the gateway's objects for ${users} users take about ${(needed / 1e9).toFixed(1)} GB; ${tmpdir()} has ${((bavail * bsize) / 1e9).toFixed(1)} GB free`);
  }
  const blockBytes = Math.max(DEFAULT_BLOCK_BYTES, users * GATEWAY_BLOCK_PER_USER);
  const gateway = await startRadosgw({ objectStore: 'bluestore', blockBytes, lifetimeMs: 24 * 3600_000 });
  const credentials = { AWS_ACCESS_KEY_ID: gateway.accessKeyId, AWS_SECRET_ACCESS_KEY: gateway.secretAccessKey, AWS_REGION: gateway.region };
  const client = s3Client(gateway.endpoint, credentials);
  try {
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
  } catch (error) {
    await gateway.stop();
    throw error;
  } finally {
    client.destroy();
  }
  return { endpoint: gateway.endpoint, credentials, stop: gateway.stop };
}

function s3Client(endpoint: string, credentials: Credentials): S3Client {
  return new S3Client({ endpoint, forcePathStyle: true, region: credentials.AWS_REGION, credentials: { accessKeyId: credentials.AWS_ACCESS_KEY_ID, secretAccessKey: credentials.AWS_SECRET_ACCESS_KEY } });
}

/**
 * boto3 uploads the first deploy's objects under `boto3/` (past 10,000 users, those of a sample of
 * the documents, as many as 10,000 users have), and the two rates are compared; said and skipped
 * without boto3.
 */
async function besideFirstDeploy(input: { users: number; out: string; runDir: string; endpoint: string; credentials: Credentials; deployRate: number; lines: (line: string) => void }): Promise<void> {
  const { lines } = input;
  const missing = boto3Missing();
  if (missing !== null) {
    lines(`  boto3 beside it:       not run: ${missing}; no ratio to a plain upload`);
    return;
  }
  const listFile = join(input.runDir, 'boto3-objects.jsonl');
  const every = Math.max(1, Math.ceil(input.users / BOTO3_USERS));
  const listed = await writeUploadList(input.out, 'boto3/', listFile, every);
  try {
    const run = await uploadWithBoto3({ out: input.out, listFile, endpoint: input.endpoint, bucket: BUCKET, concurrency: CONCURRENCY, credentials: input.credentials });
    const plainRate = run.objects / run.seconds;
    const ratio = plainRate / input.deployRate;
    lines(
      `  boto3, ${every === 1 ? 'same objects   ' : `1 doc in ${String(every).padEnd(5)}`} plain       ${run.seconds.toFixed(1).padStart(7)} s   ${String(listed).padStart(8)} objects   ${String(run.objects).padStart(8)} uploaded` +
        `   ${plainRate.toFixed(0)} objects/s, ${CONCURRENCY} at once: ${ratio.toFixed(2)}× the first deploy's rate (target ≤ ${PLAIN_OVER_DEPLOY}: ${ratio <= PLAIN_OVER_DEPLOY ? 'yes' : 'NO'})`,
    );
  } catch (error) {
    lines(`  !! boto3 beside it: ${(error as Error).message}`);
  } finally {
    rmSync(listFile, { force: true });
  }
}

/**
 * What a full compare cannot do without: the store's listing of the deployed prefix (the SDK's
 * ListObjectsV2, page after page, as the deploy lists) and every file of the tree read once, one
 * after the other, nothing hashed or compared. The files are read as the deploy reads them
 * (synchronously, in the order of the tree's folders): a read through promises, 16 at a time, is
 * several times slower, and would make any deploy look quick beside it.
 */
async function listingAndReading(out: string, endpoint: string, credentials: Credentials): Promise<{ listed: number; listSeconds: number; files: number; bytes: number; readSeconds: number }> {
  const client = s3Client(endpoint, credentials);
  let started = performance.now();
  let listed = 0;
  let token: string | undefined;
  try {
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'site/', ContinuationToken: token }));
      listed += page.KeyCount ?? page.Contents?.length ?? 0;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  } finally {
    client.destroy();
  }
  const listSeconds = (performance.now() - started) / 1000;
  started = performance.now();
  let files = 0;
  let bytes = 0;
  // The tree read as the deploy reads it (src/hosting/manifest.ts, walkAsStored): the top folder
  // through a directory handle, a batch of entries at a time, the folders below whole.
  const readFile = (path: string) => {
    bytes += readFileSync(path).length;
    files++;
  };
  const read = (directory: string, top: boolean): void => {
    if (!top) {
      for (const entry of readdirSync(directory, { withFileTypes: true })) {
        if (entry.isDirectory()) read(join(directory, entry.name), false);
        else if (entry.isFile()) readFile(join(directory, entry.name));
      }
      return;
    }
    const dir = opendirSync(directory);
    try {
      for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
        if (entry.isDirectory()) read(join(directory, entry.name), false);
        else if (entry.isFile()) readFile(join(directory, entry.name));
      }
    } finally {
      dir.closeSync();
    }
  };
  read(out, true);
  return { listed, listSeconds, files, bytes, readSeconds: (performance.now() - started) / 1000 };
}

export function startStore(script: string, directory: string): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--openssl-legacy-provider', script, directory, BUCKET], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      const line = text.split('\n')[0]!;
      if (text.includes('\n')) resolve({ child, port: (JSON.parse(line) as { port: number }).port });
    });
    child.on('exit', (code) => reject(new Error(`the local store stopped (exit code ${code})`)));
  });
}
