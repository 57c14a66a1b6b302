import { GetObjectCommand, PutBucketPolicyCommand, S3Client } from '@aws-sdk/client-s3';
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Agent, createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { loadConfig } from '../config/load-config.js';
import { FORMATS } from '../formats/registry.js';
import { keysOf, routeOfFile } from '../hosting/manifest.js';
import { routesOf } from '../hosting/routes.js';
import { isWebSubTopic } from '../hosting/websub-links.js';
import { SitePaths } from '../paths/site-paths.js';
import { BUCKET, startBenchStore, type BenchStoreKind, type Credentials } from './deploy-bench.js';
import { percentile, runWriter, until, type Outcome, type PendingChange } from './freshness.js';
import type { Expectation, WriterMix } from './writer.js';

/**
 * `npm run bench -- --freshness --deploy`: how long a change waits to be published to an object
 * store. `vidfeeds watch --deploy` runs on a copy of the demo database, publishing to s3rver or the RADOS Gateway (`--store`), with
 * a WebSub hub stand-in (an HTTP server of the bench's own) as the site's hub, while the freshness
 * writer (writer.ts) commits changes at a steady rate. For each change the bench reads the
 * store (the gateway by plain GETs, as anyone may read it; s3rver through the AWS SDK), not watch's log, until every object the change should alter holds
 * its new bytes (or is gone), and the hub has had a publish ping for each of its feeds sent after
 * the commit; it takes the time from the commit. At the end, a `--verify --dry-run` deploy
 * compares the whole store with the tree: nothing lost means nothing to write or delete.
 */

export const LIVE_DEPLOY_TARGETS = { p50Ms: 1000, p99Ms: 5000 };

/** How often the bench reads the store for the changes not yet there, and how many reads at once. */
const POLL_MS = 20;
const READS_AT_ONCE = 16;
const PREFIX = 'live/';

export interface LiveDeployContext {
  db: string;
  runDir: string;
  cliChild: string;
  writerScript: string;
  storeScript: string;
  store: BenchStoreKind;
  rate: number;
  seconds: number;
  mix: WriterMix;
  env: Record<string, string>;
  runCli: (args: string[], env: Record<string, string>) => Promise<{ seconds: number; stdout: string; stderr: string }>;
  lines: (line: string) => void;
}

const now = () => performance.timeOrigin + performance.now();

export async function benchLiveDeploy(ctx: LiveDeployContext): Promise<void> {
  const { db, runDir, lines } = ctx;
  const out = join(runDir, 'watched');
  const hub = await startHub();
  const config = join(runDir, 'vidfeeds.config.json');
  writeFileSync(config, `${JSON.stringify({ baseUrl: 'https://videos.example.org', notifyAfter: 'deploy', websub: { hubs: [hub.url] } })}\n`);
  const site = new Database(db);
  site.pragma('journal_mode = WAL');
  site.close();
  const store = await startBenchStore(ctx.store, ctx.storeScript, join(runDir, 'store'));
  const { endpoint, credentials } = store;
  const state = `${out}.state.sqlite`;
  const cli = ['--db', db, '--out', out, '--state', state, '--config', config];
  // The deploys name the builds' state, as watch's do: a deploy that cannot tell which build state
  // it published leaves watch's first deploy a full compare, minutes long at 10,000 users.
  const target = ['--to', `s3://${BUCKET}/${PREFIX.slice(0, -1)}`, '--endpoint', endpoint, '--config', config, '--out', out, '--state', state];
  try {
    const first = await ctx.runCli(['build', ...cli], {});
    const published = await ctx.runCli(['deploy', ...target, '--no-notify'], credentials);
    lines(`first build and deploy  ${first.seconds.toFixed(1)} s + ${published.seconds.toFixed(1)} s (untimed: what watch starts from)`);

    // VIDFEEDS_BENCH_PROFILE_DIR=<dir>: watch and its deploys' process write CPU profiles there (dist/bench/stages.js sums them).
    const profile = process.env.VIDFEEDS_BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.VIDFEEDS_BENCH_PROFILE_DIR}`] : [];
    const watch = spawn(process.execPath, [...profile, ctx.cliChild, 'watch', ...cli, '--deploy', `s3://${BUCKET}/${PREFIX.slice(0, -1)}`, '--endpoint', endpoint], {
      env: { ...process.env, ...ctx.env, ...credentials },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let watchErr = '';
    watch.stderr.setEncoding('utf8').on('data', (d: string) => (watchErr += d));
    const watchExit = new Promise<number | null>((resolve) => watch.on('close', (code) => resolve(code)));
    try {
      const ready = await until(() => /start: (full|incremental) build/.test(watchErr) || watch.exitCode !== null, 600_000);
      if (!ready || watch.exitCode !== null) throw new Error(`watch did not make its first build:\n${watchErr}`);
      const poller = storePoller(endpoint, credentials, config, hub.pings, await publicReads(ctx.store, endpoint, credentials));
      const outcomes = await runWriter(ctx, db, (entry) => poller.arrived(entry), POLL_MS);
      poller.close();
      watch.kill('SIGINT');
      if ((await watchExit) !== 0) throw new Error(`watch exited with an error:\n${watchErr.slice(-4000)}`);
      writeFileSync(join(runDir, 'watch.log'), watchErr); // kept with --keep
      report(ctx, outcomes, watchErr);
    } finally {
      if (watch.exitCode === null) watch.kill('SIGKILL');
    }
    // Nothing lost: the store holds the tree, object for object.
    const verify = await ctx.runCli(['deploy', ...target, '--verify', '--dry-run', '--json', '--no-notify'], credentials);
    const counts = (JSON.parse(verify.stdout.split('\n').find((l) => l.startsWith('{'))!) as { counts: { objects: number; uploaded: number; deleted: number } }).counts;
    lines(
      counts.uploaded === 0 && counts.deleted === 0
        ? `after the run           the store equals the watched tree: ${counts.objects} objects (nothing lost: ok)`
        : `after the run           the store differs from the watched tree: ${counts.uploaded} objects to write, ${counts.deleted} to delete (MISSED)`,
    );
  } finally {
    await store.stop();
    hub.server.close();
  }
}

/** The site's WebSub hub: answers every publish ping, noting when each feed's came. */
function startHub(): Promise<{ url: string; server: Server; pings: Map<string, number[]> }> {
  const pings = new Map<string, number[]>();
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const at = now();
      for (const url of new URLSearchParams(body).getAll('hub.url')) pings.set(url, [...(pings.get(url) ?? []), at]);
      response.writeHead(204).end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server, pings })));
}

/**
 * Whether the bench reads the gateway's objects as anyone may, by plain HTTP GETs (a bucket policy
 * lets everyone read the bucket's objects): a GET through the AWS SDK costs the bench about 2 ms
 * of CPU, a fifth of a core at the run's pace, taken from the machine it measures. s3rver keeps
 * no policies: the bench reads it through the SDK.
 */
async function publicReads(store: BenchStoreKind, endpoint: string, credentials: Credentials): Promise<boolean> {
  if (store !== 'radosgw') return false;
  const client = s3ClientOf(endpoint, credentials);
  // Listing too: without it S3 answers a GET of a missing key 403, not 404.
  const Policy = JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Principal: '*', Action: 's3:GetObject', Resource: `arn:aws:s3:::${BUCKET}/*` },
      { Effect: 'Allow', Principal: '*', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${BUCKET}` },
    ],
  });
  try {
    await client.send(new PutBucketPolicyCommand({ Bucket: BUCKET, Policy }));
  } finally {
    client.destroy();
  }
  // The first deploy wrote robots.txt: a gateway that did not take the policy refuses it.
  const agent = new Agent();
  const { status } = await plainGet(objectUrl(endpoint, `${PREFIX}robots.txt`), agent);
  const missing = await plainGet(objectUrl(endpoint, `${PREFIX}no-such-object`), agent);
  if (status !== 200 || missing.status !== 404) {
    throw new Error(`after a bucket policy that lets anyone read, the gateway answers an anonymous GET of ${PREFIX}robots.txt ${status} (not 200) and of a missing key ${missing.status} (not 404)`);
  }
  agent.destroy();
  return true;
}

function objectUrl(endpoint: string, key: string): string {
  return `${endpoint}/${BUCKET}/${key.split('/').map(encodeURIComponent).join('/')}`;
}

/** Whether an object's text (null: the store has none) shows what a change expects of it. */
function shows(expectation: Expectation, text: string | null): boolean {
  if ('absent' in expectation) return text === null;
  if (text === null) return false;
  return 'lacks' in expectation ? !text.includes(expectation.lacks) : text.includes(expectation.contains);
}

function s3ClientOf(endpoint: string, credentials: Credentials): S3Client {
  return new S3Client({ endpoint, forcePathStyle: true, region: credentials.AWS_REGION, credentials: { accessKeyId: credentials.AWS_ACCESS_KEY_ID, secretAccessKey: credentials.AWS_SECRET_ACCESS_KEY } });
}

/** An object's status and bytes, read by a plain GET of its path-style URL. */
function plainGet(url: string, agent: Agent): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { agent }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    }).on('error', reject);
  });
}

/** Reads the store for a change's objects, a few reads at once, and the hub's pings for its feeds. */
function storePoller(endpoint: string, credentials: Credentials, configFile: string, pings: ReadonlyMap<string, number[]>, anonymous: boolean) {
  const client = s3ClientOf(endpoint, credentials);
  const agent = new Agent({ keepAlive: true, maxSockets: READS_AT_ONCE });
  const config = loadConfig({ configFile });
  const paths = new SitePaths(config.baseUrl, config.pages, FORMATS);
  const routes = routesOf(FORMATS);
  let reading = 0;
  const waiting: Array<() => void> = [];
  const slot = async () => {
    while (reading >= READS_AT_ONCE) await new Promise<void>((resolve) => waiting.push(resolve));
    reading++;
  };
  const release = () => {
    reading--;
    waiting.shift()?.();
  };
  const keyOf = (path: string) => {
    const match = routeOfFile(routes, path);
    return `${PREFIX}${match === null ? path : keysOf(match)[0]!}`;
  };
  // The object's text, or null when the store has none.
  const read = async (key: string): Promise<string | null> => {
    if (anonymous) {
      const { status, body } = await plainGet(objectUrl(endpoint, key), agent);
      if (status === 404) return null;
      if (status !== 200) throw new Error(`GET ${key}: HTTP ${status}`);
      return body.toString('latin1');
    }
    try {
      const answer = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      // Read to the end, which frees the connection.
      return Buffer.from(await answer.Body!.transformToByteArray()).toString('latin1');
    } catch (error) {
      if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return null;
      throw error;
    }
  };
  const inStore = async (expectation: Expectation): Promise<boolean> => {
    await slot();
    try {
      return shows(expectation, await read(keyOf(expectation.path)));
    } catch {
      return false; // not answered: read again later
    } finally {
      release();
    }
  };
  // The feeds a change rewrote, by URL: each must be pinged after the commit (a removed one is not).
  const feedsOf = (expectations: readonly Expectation[]) =>
    expectations.flatMap((e) => {
      const match = 'absent' in e ? null : routeOfFile(routes, e.path);
      return match !== null && match.kind === 'keyed' && isWebSubTopic(match.format) ? [paths.urlOfFile(e.path)] : [];
    });
  const feeds = new Map<number, string[]>();
  const lastRead = new Map<number, number>();
  return {
    close(): void {
      agent.destroy();
      client.destroy();
    },
    async arrived(entry: PendingChange): Promise<boolean> {
      const { id, committedAt } = entry.change;
      if (!feeds.has(id)) feeds.set(id, feedsOf(entry.change.expect));
      const urls = feeds.get(id)!;
      // The store is read for a change once the hub has heard of all its feeds (which comes after
      // its objects are written), or, for one without feeds, every eighth of its age: reading
      // every waiting change every round would load the store whose pace is measured. Either way
      // a change is seen no earlier than it is in the store and pinged.
      if (urls.length > 0 && !urls.every((url) => (pings.get(url) ?? []).some((at) => at >= committedAt))) return false;
      const at = now();
      if (urls.length === 0 && at - (lastRead.get(id) ?? 0) < Math.max(POLL_MS, (at - committedAt) / 8)) return false;
      lastRead.set(id, at);
      // One object at a time, in order: the others go up in the same deploy.
      while (entry.left.length > 0 && (await inStore(entry.left[0]!))) entry.left = entry.left.slice(1);
      return entry.left.length === 0;
    },
  };
}

function report(ctx: LiveDeployContext, outcomes: readonly Outcome[], watchErr: string): void {
  const seen = outcomes.flatMap((o) => (o.ms === null ? [] : [o.ms])).sort((a, b) => a - b);
  const late = outcomes.length - seen.length;
  const p50 = percentile(seen, 0.5);
  const p99 = percentile(seen, 0.99);
  const deploys = (watchErr.match(/deploy to s3:\/\//g) ?? []).length;
  const failed = (watchErr.match(/deploy failed \(exit code/g) ?? []).length;
  const full = (watchErr.match(/deploy to s3:\/\/\S+ full compare/g) ?? []).length;
  const ms = (value: number) => `${Number.isNaN(value) ? '-' : value.toFixed(0)} ms`.padStart(8);
  const mark = (ok: boolean) => (ok ? 'ok' : 'MISSED');
  ctx.lines(`writer                  ${outcomes.length} changes (${ctx.mix} mix) at ${ctx.rate}/s for ${ctx.seconds} s`);
  ctx.lines(
    `commit → store + ping   p50 ${ms(p50)}   p95 ${ms(percentile(seen, 0.95))}   p99 ${ms(p99)}   max ${ms(seen.at(-1) ?? NaN)}` +
      `   (targets p50 < ${LIVE_DEPLOY_TARGETS.p50Ms} ms: ${mark(p50 < LIVE_DEPLOY_TARGETS.p50Ms)}, p99 < ${LIVE_DEPLOY_TARGETS.p99Ms} ms: ${mark(p99 < LIVE_DEPLOY_TARGETS.p99Ms)})` +
      (late > 0 ? `   ${late} changes NOT in the store or not pinged 60 s after the last commit (MISSED)` : '   nothing late'),
  );
  ctx.lines(`watch                   ${deploys} deploys (${(outcomes.length / Math.max(deploys, 1)).toFixed(1)} changes each), ${full} of them full compares, ${failed} failed`);
}
