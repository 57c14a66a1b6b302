import { spawn, type ChildProcess } from 'node:child_process';
import { BIN, type CliResult } from './cli.js';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';

/**
 * A local S3-compatible store for the deploy tests: s3rver on a free port in a temporary folder,
 * behind a small proxy that records every request (method, key, when it started and ended, its
 * status) and can answer some of them with errors or hold them, as a busy or failing store would.
 * The deploy talks to the proxy through the AWS SDK exactly as to any S3 endpoint.
 */

export const BUCKET = 'site';
const SERVER = join(import.meta.dirname, 's3rver-server.mjs');
export const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' };

export interface LoggedRequest {
  method: string;
  /** The object key (decoded), '' for bucket requests. */
  key: string;
  query: string;
  started: number;
  ended: number;
  status: number;
}

export interface LocalS3 {
  endpoint: string;
  log: LoggedRequest[];
  /**
   * Answers the next `times` PUTs of `key` with `status` (503 SlowDown, 500 InternalError);
   * Infinity for always. `body` replaces the error document (Ceph's have no Message; '' for none).
   */
  failPuts(key: string, times: number, status: number, body?: string): void;
  /** Answers the first `times` PUTs of every key with `status` (a throttling store); 0 to stop. */
  failEveryPut(times: number, status: number): void;
  /** Answers the next `times` batch deletions (POST ?delete) with `status`; 0 to stop. */
  failDeletes(times: number, status: number): void;
  /** Holds every PUT after `count` more have been answered, until `release` (or `discardHeld`). */
  holdPutsAfter(count: number): void;
  release(): void;
  /** Drops the held PUTs without passing them on: the store never sees them. */
  discardHeld(): void;
  /** How many PUTs are held now. */
  heldCount(): number;
  /** Delay added to every request, so that concurrent writes interleave. */
  delayMs: number;
  /** Called as each injected failure is answered (say, to slow the store from then on). */
  onInjectedFailure: ((key: string) => void) | null;
  client: S3Client;
  /** Every object key in the bucket. */
  keys(): Promise<string[]>;
  get(key: string): Promise<{ body: Buffer; contentType?: string; cacheControl?: string; contentEncoding?: string; metadata: Record<string, string> }>;
  head(key: string): ReturnType<S3Client['send']>;
  close(): Promise<void>;
}

export async function startLocalS3(): Promise<LocalS3> {
  // The SDK's notice that its future versions need Node 22 is not the test's to print.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const directory = mkdtempSync(join(tmpdir(), 'vidfeeds-s3-'));
  const server = spawn(process.execPath, ['--openssl-legacy-provider', SERVER, directory, BUCKET, process.env.S3RVER_LOG === '1' ? '1' : '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const backend = await new Promise<number>((resolve, reject) => {
    let text = '';
    server.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const line = text.split('\n')[0]!;
      if (text.includes('\n') && line.startsWith('{')) resolve((JSON.parse(line) as { port: number }).port);
    });
    server.on('exit', (code) => reject(new Error(`s3rver stopped (exit code ${code})`)));
  });
  const log: LoggedRequest[] = [];
  const failures = new Map<string, { times: number; status: number; body?: string }>();
  const everyPut = { times: 0, status: 503, tries: new Map<string, number>() };
  const deletions: { times: number; status: number; body?: string } = { times: 0, status: 503 };
  let holdAfter: number | null = null;
  const held: Array<{ go: () => void; drop: () => void }> = [];
  const state: { delayMs: number; onInjectedFailure: ((key: string) => void) | null } = { delayMs: 0, onInjectedFailure: null };

  const forward = (req: IncomingMessage, res: ServerResponse, entry: LoggedRequest) => {
    const upstream = httpRequest({ host: '127.0.0.1', port: backend, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      answer.on('end', () => {
        entry.ended = performance.now();
        entry.status = answer.statusCode ?? 0;
      });
    });
    req.pipe(upstream);
  };
  const proxy: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = decodeURIComponent(url.pathname);
    const key = path.startsWith(`/${BUCKET}/`) ? path.slice(BUCKET.length + 2) : '';
    const entry: LoggedRequest = { method: req.method ?? '', key, query: url.search, started: performance.now(), ended: Number.NaN, status: 0 };
    log.push(entry);
    const go = () => {
      let failure = req.method === 'PUT' ? failures.get(key) : req.method === 'POST' && url.searchParams.has('delete') ? deletions : undefined;
      if (req.method === 'PUT' && failure === undefined && everyPut.times > 0) {
        const tries = (everyPut.tries.get(key) ?? 0) + 1;
        everyPut.tries.set(key, tries);
        if (tries <= everyPut.times) failure = { times: 1, status: everyPut.status };
      }
      if (failure !== undefined && failure.times > 0) {
        failure.times--;
        req.resume();
        const code = failure.status === 503 ? 'SlowDown' : failure.status === 403 ? 'AccessDenied' : 'InternalError';
        res.writeHead(failure.status, { 'content-type': 'application/xml' });
        res.end(failure.body ?? `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>injected by the test</Message></Error>`);
        entry.ended = performance.now();
        entry.status = failure.status;
        state.onInjectedFailure?.(key);
        return;
      }
      forward(req, res, entry);
    };
    if (req.method === 'PUT' && holdAfter !== null) {
      if (holdAfter <= 0) {
        held.push({ go, drop: () => res.destroy() });
        return;
      }
      holdAfter--;
    }
    if (state.delayMs > 0) setTimeout(go, state.delayMs);
    else go();
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const port = (proxy.address() as { port: number }).port;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ endpoint: `http://127.0.0.1:${backend}`, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });

  return {
    endpoint,
    log,
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(ms: number) {
      state.delayMs = ms;
    },
    get onInjectedFailure() {
      return state.onInjectedFailure;
    },
    set onInjectedFailure(listener: ((key: string) => void) | null) {
      state.onInjectedFailure = listener;
    },
    failPuts: (key, times, status, body) => failures.set(key, { times, status, ...(body === undefined ? {} : { body }) }),
    failDeletes: (times, status) => {
      deletions.times = times;
      deletions.status = status;
    },
    failEveryPut: (times, status) => {
      everyPut.times = times;
      everyPut.status = status;
      everyPut.tries.clear();
    },
    holdPutsAfter: (count) => {
      holdAfter = count;
    },
    release: () => {
      holdAfter = null;
      for (const h of held.splice(0)) h.go();
    },
    discardHeld: () => {
      holdAfter = null;
      for (const h of held.splice(0)) h.drop();
    },
    heldCount: () => held.length,
    client,
    keys: async () => {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, ContinuationToken: token }));
        for (const item of page.Contents ?? []) keys.push(item.Key!);
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token !== undefined);
      return keys.sort();
    },
    get: async (key) => {
      const object = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      return {
        body: Buffer.from(await object.Body!.transformToByteArray()),
        contentType: object.ContentType,
        cacheControl: object.CacheControl,
        contentEncoding: object.ContentEncoding,
        metadata: object.Metadata ?? {},
      };
    },
    head: (key) => client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })),
    close: async () => {
      for (const h of held.splice(0)) h.drop();
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      client.destroy();
      await new Promise<void>((resolve) => {
        server.once('exit', () => resolve());
        server.kill('SIGTERM');
      });
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/**
 * Runs the built CLI without blocking this process (the store answers from it), with the store's
 * credentials in the environment, as the SDK's chain reads them.
 */
export function runCli(args: string[], options: { cwd?: string; env?: Record<string, string>; onStart?: (child: ChildProcess) => void } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: { ...process.env, ...CREDENTIALS, FORCE_COLOR: '0', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal === null ? null : 128), stdout, stderr }));
    options.onStart?.(child);
  });
}

/** A child-process hook (runCli's `onStart`) that runs `act` once `ready` holds, checked every 10 ms. */
export function whenReady(ready: () => boolean, act: (child: ChildProcess) => void): (child: ChildProcess) => void {
  return (child) => {
    const timer = setInterval(() => {
      if (!ready()) return;
      clearInterval(timer);
      act(child);
    }, 10);
    child.on('exit', () => clearInterval(timer));
  };
}

/** Kills the deploy with `signal` once the store holds one of its writes (`holdPutsAfter`). */
export function killWhenHeld(s3: LocalS3, signal: NodeJS.Signals = 'SIGKILL'): (child: ChildProcess) => void {
  return whenReady(() => s3.heldCount() > 0, (child) => child.kill(signal));
}
