import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { cpSync, existsSync, writeFileSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { basename, dirname, join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { cli } from '../helpers/cli.js';
import { BUCKET, killWhenHeld, runCli, whenReady, type LoggedRequest } from '../helpers/s3.js';
import { useDeployFixture } from '../helpers/deploy-fixture.js';
import { schemaChecked } from '../helpers/report-schema.js';

/**
 * `vidfeeds deploy` meeting the faults of a production store: one that never answers, one that
 * stops answering, one that throttles every write, one that fails a write for good or answers
 * without a message, and a signal in each phase. Every one ends with the exit code of
 * docs/report.md, its report, and the build lock released.
 */

const BASE = 'https://videos.example.org';

const fx = useDeployFixture('vidfeeds-deploy-faults-', { users: 4, seed: 5 }, { baseUrl: BASE, compress: ['gzip'], notifyAfter: 'deploy' });

function deploy(prefix: string, extra: string[] = [], options: { endpoint?: string; out?: string; onStart?: (child: ChildProcess) => void } = {}) {
  return runCli(['deploy', '--out', options.out ?? fx.out, '--to', `s3://${BUCKET}/${prefix}`, '--endpoint', options.endpoint ?? fx.s3.endpoint, '--config', fx.config, '--no-notify', '--json', ...extra], {
    cwd: fx.dir,
    onStart: options.onStart,
  }).then(schemaChecked);
}

function lockOf(tree: string): string {
  return join(dirname(tree), '.vidfeeds', `${basename(tree)}.lock`);
}

const puts = (log: readonly LoggedRequest[], prefix: string) => log.filter((r) => r.method === 'PUT' && r.key.startsWith(`${prefix}/`));

describe('vidfeeds deploy against a store that does not answer', () => {
  let silent: Server;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // Accepts every connection and never writes a byte back.
    silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it('ends with exit 75 once a request has waited --timeout, with its report, and releases the lock', async () => {
    const endpoint = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    const result = await deploy('silent', ['--timeout', '1'], { endpoint });
    expect(result.code, result.stderr).toBe(75);
    expect(result.stderr).toContain('the store did not answer the listing of silent/ within 1 s (--timeout)');
    expect(JSON.parse(result.stdout)).toMatchObject({ command: 'deploy', ok: false, exitCode: 75 });
    expect(existsSync(lockOf(fx.out))).toBe(false);
    expect(sockets.length).toBeGreaterThan(0);
  });

  it('ends with exit 75 when the store stops answering during the writes, naming what was not written', async () => {
    fx.s3.log.length = 0;
    fx.s3.holdPutsAfter(10);
    const result = await deploy('stalled', ['--timeout', '2', '--concurrency', '4']);
    fx.s3.discardHeld();
    expect(result.code, result.stderr).toBe(75);
    const report = JSON.parse(result.stdout);
    expect(report.failed.length).toBeGreaterThan(0);
    for (const failure of report.failed) expect(failure.message).toMatch(/^the store did not answer PUT stalled\/.* within 2 s/);
    expect(report.notAttempted.length).toBeGreaterThan(0);
    expect(result.stderr.match(/^vidfeeds: not attempted: /gm)).toHaveLength(1);
    expect(result.stderr).toContain(`vidfeeds: not attempted: ${report.notAttempted.length} objects (`);
    expect(existsSync(lockOf(fx.out))).toBe(false);
  });
});

describe('vidfeeds deploy stopped by a signal', () => {
  it('aborts the writes under way at once, reports what was not written and releases the lock', async () => {
    fx.s3.log.length = 0;
    fx.s3.holdPutsAfter(5);
    const result = await deploy('signalled', ['--concurrency', '4'], { onStart: killWhenHeld(fx.s3, 'SIGTERM') });
    fx.s3.discardHeld();
    expect(result.code, result.stderr).toBe(143);
    expect(result.stderr).toContain('vidfeeds: SIGTERM: stopping the deploy');
    expect(result.stderr).toMatch(/^vidfeeds: stopped by SIGTERM: deploy to s3:\/\/site\/signalled\//m);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ command: 'deploy', ok: false, exitCode: 143 });
    expect(report.failed).toEqual([]);
    expect(report.notAttempted.length).toBeGreaterThan(0);
    expect(result.stderr.match(/^vidfeeds: not attempted: /gm)).toHaveLength(1);
    expect(existsSync(lockOf(fx.out))).toBe(false);
  });

  it('is heard while the tree is read and hashed', async () => {
    // A tree whose first document is large enough that the deploy is still reading it when the signal comes.
    const big = join(fx.dir, 'big');
    cpSync(fx.out, big, { recursive: true });
    const files = JSON.parse(cli(['hosting', 'manifest', '--root', big, '--config', fx.config]).stdout).files as Array<{ file: string }>;
    writeFileSync(join(big, ...files[0]!.file.split('/')), Buffer.alloc(160 * 1024 * 1024, 'x'));
    fx.s3.log.length = 0;
    const result = await deploy('reading', [], { out: big, onStart: whenReady(() => existsSync(lockOf(big)), (child) => child.kill('SIGTERM')) });
    expect(result.code, result.stderr).toBe(143);
    expect(result.stderr).toMatch(/^vidfeeds: stopped by SIGTERM: deploy to s3:\/\/site\/reading\//m);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ command: 'deploy', ok: false, exitCode: 143, counts: { uploaded: 0 } });
    expect(report.seconds).toBeGreaterThan(0);
    expect(puts(fx.s3.log, 'reading')).toEqual([]);
    expect(existsSync(lockOf(big))).toBe(false);
  });
});

describe('vidfeeds deploy against a failing store', () => {
  it('gives every object its --tries, however many objects are throttled at once', async () => {
    fx.s3.log.length = 0;
    fx.s3.failEveryPut(2, 503);
    const result = await deploy('throttled', ['--tries', '3', '--concurrency', '8']);
    fx.s3.failEveryPut(0, 503);
    expect(result.code, result.stderr).toBe(0);
    const byKey = new Map<string, number[]>();
    for (const r of puts(fx.s3.log, 'throttled')) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r.status]);
    // Enough objects that the SDK's shared retry allowance (500 tokens, 5 a retry) could not have paid for them.
    expect(byKey.size).toBeGreaterThan(60);
    for (const [key, statuses] of byKey) expect(statuses, key).toEqual([503, 503, 200]);
  });

  it('stops sending requests once an object fails, and names what it did not attempt in one line', async () => {
    const first = await deploy('halting', ['--dry-run']);
    const keys = JSON.parse(first.stdout).uploaded as string[];
    const broken = keys.find((k) => k.endsWith('/oembed/xml'))!;
    fx.s3.failPuts(broken, Infinity, 500);
    fx.s3.log.length = 0;
    // Once the object has failed, answers take a while: a worker may finish the request it had under
    // way and start one more before the deploy has read the failure, but not a round trip beyond that
    // (on a loaded machine reading the failure can otherwise take as long as a request).
    fx.s3.onInjectedFailure = (key) => {
      if (key === broken) fx.s3.delayMs = 300;
    };
    const result = await deploy('halting', ['--tries', '2', '--concurrency', '4']).finally(() => {
      fx.s3.onInjectedFailure = null;
      fx.s3.delayMs = 0;
    });
    fx.s3.failPuts(broken, 0, 500);
    expect(result.code, result.stderr).toBe(75);
    const attempts = puts(fx.s3.log, 'halting').filter((r) => r.key === broken);
    expect(attempts.map((r) => r.status)).toEqual([500, 500]);
    const gaveUp = attempts[1]!.ended;
    // The other workers may each have sent one request before the answer reached the deploy; no more.
    expect(puts(fx.s3.log, 'halting').filter((r) => r.started > gaveUp).length).toBeLessThanOrEqual(3);
    const report = JSON.parse(result.stdout);
    expect(report.failed).toEqual([{ key: broken, action: 'write', message: 'InternalError: injected by the test (HTTP 500), after 2 tries', transient: true }]);
    expect(report.notAttempted).toContain('halting/sitemap.xml');
    expect(result.stderr.match(/^vidfeeds: not attempted: /gm)).toHaveLength(1);
    expect(result.stderr).toContain(`vidfeeds: not attempted: ${report.notAttempted.length} objects (a request failed, and what follows would link to what is missing): `);
    expect(result.stderr).toContain('`notAttempted` in the report');
  });

  it('names the HTTP status and code of an error the store sent without a message', async () => {
    const dry = JSON.parse((await deploy('bare', ['--dry-run'])).stdout).uploaded as string[];
    const refused = dry.find((k) => k.endsWith('/rss/'))!;
    fx.s3.failPuts(refused, Infinity, 403, '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><RequestId>tx1</RequestId></Error>');
    const denied = await deploy('bare', ['--tries', '1', '--concurrency', '1']);
    fx.s3.failPuts(refused, 0, 403);
    // Refused for the credentials or the bucket: a person must fix it, as when the listing is refused.
    expect(denied.code, denied.stderr).toBe(2);
    expect(denied.stderr).toContain(`vidfeeds: not written: ${refused}: AccessDenied (HTTP 403)\n`);
    expect(denied.stderr).toContain('the store refused the writes: check the bucket, the endpoint and the credentials');

    // An object the first run did not come to, so that this run tries it.
    const empty = (JSON.parse(denied.stdout).notAttempted as string[])[0]!;
    fx.s3.failPuts(empty, Infinity, 503, '');
    const unavailable = await deploy('bare', ['--tries', '1', '--concurrency', '1']);
    fx.s3.failPuts(empty, 0, 503);
    expect(unavailable.code, unavailable.stderr).toBe(75);
    expect(unavailable.stderr).toContain(`vidfeeds: not written: ${empty}: HTTP 503\n`);
    expect(`${denied.stderr}${unavailable.stderr}`).not.toContain('UnknownError');
  });
});

describe('vidfeeds deploy to an endpoint that cannot be reached', () => {
  it('exits 2 for a host name no resolver knows (a typo cron would retry for ever), 75 when the resolver cannot answer now', async () => {
    const host = 'no-such-store.invalid';
    // What this machine's resolver says of the name decides which of the two the deploy must give.
    const resolverSays = await lookup(host).then(
      () => 'found',
      (error: NodeJS.ErrnoException) => error.code,
    );
    const result = await deploy('unresolved', ['--tries', '2'], { endpoint: `http://${host}:9000` });
    expect(result.stderr).toContain(`${resolverSays}: getaddrinfo ${resolverSays} ${host}`);
    expect(result.stderr).not.toMatch(/\bError: getaddrinfo/);
    if (resolverSays === 'ENOTFOUND') {
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain('check the bucket, the endpoint and the credentials');
    } else {
      expect(resolverSays).toBe('EAI_AGAIN');
      expect(result.code, result.stderr).toBe(75);
    }
    expect(JSON.parse(result.stdout)).toMatchObject({ command: 'deploy', ok: false, exitCode: result.code });
    expect(existsSync(lockOf(fx.out))).toBe(false);
  });
});

describe('vidfeeds deploy failing to delete', () => {
  it('names each object it could not delete as not deleted, not as not written', async () => {
    const first = await deploy('deletions');
    expect(first.code, first.stderr).toBe(0);
    // A feed of a user the tree no longer has: an object of the site's own, so the deploy deletes it.
    const feed = (JSON.parse(first.stdout).uploaded as string[]).find((k) => k.endsWith('/rss/'))!;
    const stray = `deletions/gone-user/${feed.split('/').slice(2).join('/')}`;
    await fx.s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: stray, Body: 'the feed of a removed user' }));
    fx.s3.failDeletes(Infinity, 403);
    const result = await deploy('deletions', ['--verify', '--tries', '1']);
    fx.s3.failDeletes(0, 403);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(new RegExp(`^vidfeeds: not deleted: ${stray}: AccessDenied`, 'm'));
    expect(result.stderr).not.toContain('not written');
    expect(JSON.parse(result.stdout).failed).toEqual([expect.objectContaining({ key: stray, action: 'delete', refused: true })]);
    expect(await fx.s3.keys()).toContain(stray);
  });
});
