import Database from 'better-sqlite3';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { freePort, http, type HttpResult } from '../helpers/http.js';
import { nginxMainConfig, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { startServe, type ServeProcess } from '../helpers/serve-process.js';
import { insertUser } from '../helpers/site-fixture.js';
import { xmllintSchema, xpath } from '../helpers/validators.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The recommendation POST against flooding and spam (issue 18), as a site runs it: the built
 * `vidfeeds serve` on a small demo site, `vidfeeds build` and `vidfeeds recommendations` from the
 * command line, and Debian's nginx in front with the configuration `vidfeeds hosting nginx
 * --upstream` prints.
 */

const SCHEMA = resolve(import.meta.dirname, '../../docs/schemas/recommendations.xsd');
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

let work: { dir: string; cleanup: () => void };
let dbFile: string;
let serve: ServeProcess;
let publishing: ServeProcess;
let nginx: RunningNginx;
let nginxPort: number;

function vidfeeds(...args: string[]) {
  return cli(args, { cwd: work.dir });
}

function post(port: number, user: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<HttpResult> {
  return http(port, `/${user}/openrecommender/`, { method: 'POST', headers: { ...FORM, ...headers }, body: new URLSearchParams(fields).toString() });
}

const item = (n: number, title = `Item ${n}`) => ({ title, image: `https://img.example.org/${n}.jpg`, link: `https://video.example.org/watch?v=${n}` });

function rows(sql: string, ...params: unknown[]): number {
  const db = new Database(dbFile, { readonly: true });
  try {
    return (db.prepare(`SELECT count(*) AS n FROM recommendations WHERE ${sql}`).get(...params) as { n: number }).n;
  } finally {
    db.close();
  }
}

const document = (user: string) => readFileSync(join(work.dir, 'out', user, 'openrecommender', 'index.xml'), 'utf8');

beforeAll(async () => {
  work = tempDir('vidfeeds-post-');
  dbFile = join(work.dir, 'site.sqlite');
  const made = vidfeeds('demo', '--db', 'site.sqlite', '--users', '3');
  expect(made.code, made.stderr).toBe(0);
  const db = new Database(dbFile);
  for (const username of ['target', 'capped', 'dup', 'markup', 'nginxed', 'trusting']) insertUser(db, { username });
  db.close();
  const limits = {
    perClient: { limit: 3, windowSeconds: 3600, maxPending: 50 },
    perUser: { limit: 100, windowSeconds: 3600, maxPending: 4 },
    trustedProxies: ['127.0.0.1'],
  };
  writeFileSync(join(work.dir, 'vidfeeds.config.json'), JSON.stringify({ baseUrl: 'http://127.0.0.1:8080', recommendationSubmit: limits }));
  writeFileSync(
    join(work.dir, 'publish.json'),
    JSON.stringify({ baseUrl: 'http://127.0.0.1:8080', recommendationSubmit: { ...limits, publishAtOnce: true } }),
  );
  const built = vidfeeds('build', '--db', 'site.sqlite', '--out', 'out');
  expect(built.code, built.stderr).toBe(0);

  serve = await startServe(['--db', 'site.sqlite', '--out', 'out'], { cwd: work.dir });
  publishing = await startServe(['--db', 'site.sqlite', '--out', 'out', '--config', 'publish.json', '--no-access-log'], { cwd: work.dir });

  nginxPort = await freePort();
  const generated = vidfeeds('hosting', 'nginx', '--root', 'out', '--listen', `127.0.0.1:${nginxPort}`, '--upstream', `127.0.0.1:${serve.port}`);
  expect(generated.code, generated.stderr).toBe(0);
  const prefix = join(work.dir, 'nginx');
  mkdirSync(prefix);
  nginx = await startNginx(prefix, nginxMainConfig(prefix, generated.stdout), [nginxPort]);
});

afterAll(async () => {
  await nginx?.stop();
  for (const running of [serve, publishing]) {
    if (running === undefined || running.child.exitCode !== null) continue;
    const exited = new Promise((done) => running.child.once('exit', done));
    running.child.kill('SIGTERM');
    await exited;
  }
  work?.cleanup();
});

describe('the recommendation POST through vidfeeds serve', () => {
  it('answers a burst past the per-client rate with 429 and Retry-After, and stores nothing more', async () => {
    const client = { 'X-Forwarded-For': '203.0.113.1' };
    const answers = await Promise.all(Array.from({ length: 10 }, (_, n) => post(serve.port, 'target', item(n), client)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([202, 202, 202, 429, 429, 429, 429, 429, 429, 429]);
    for (const refused of answers.filter((a) => a.status === 429)) {
      expect(refused.headers['retry-after']).toMatch(/^\d+$/);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(3500);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(3600);
    }
    expect((await post(serve.port, 'target', item(99), client)).status).toBe(429);
    expect(rows(`submitter_address = '203.0.113.1'`)).toBe(3);
    expect(rows(`status = 'pending' AND user_id = (SELECT id FROM users WHERE username = 'target')`)).toBe(3);
    // Another client is not held back by the first one's limit.
    expect((await post(serve.port, 'target', item(100), { 'X-Forwarded-For': '203.0.113.2' })).status).toBe(202);
  });

  it('keeps a pending item out of every document until it is approved; the next incremental build publishes it', () => {
    const first = vidfeeds('build', '--db', 'site.sqlite', '--out', 'out');
    expect(first.code, first.stderr).toBe(0);
    // Receiving pending rows changes no document: nothing is rendered again.
    expect(first.stderr).toMatch(/incremental build \(\d+ changes since the last build → 0 users, 0 videos\)/);
    expect(document('target')).not.toContain('Item');
    const listed = vidfeeds('recommendations', 'list', '--db', 'site.sqlite', '--user', 'target');
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.trim().split('\n')).toHaveLength(4);
    expect(listed.stdout).toMatch(/^\d+\tpending\ttarget\t\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\t203\.0\.113\.\d\thttps:\/\/video\.example\.org\/watch\?v=\d+\tItem \d+$/m);

    const rejected = vidfeeds('recommendations', 'reject', '--db', 'site.sqlite', '--from', '203.0.113.2');
    expect(rejected.code, rejected.stderr).toBe(0);
    const approved = vidfeeds('recommendations', 'approve', '--db', 'site.sqlite', '--user', 'target');
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout.trim().split('\n')).toHaveLength(3);

    const next = vidfeeds('build', '--db', 'site.sqlite', '--out', 'out');
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toMatch(/incremental build \(\d+ changes since the last build → 1 users, 0 videos\)/);
    const body = document('target');
    expect(xmllintSchema(SCHEMA, { target: body }).ok).toBe(true);
    expect(xpath(body, 'count(/recommendations/recommendation)')).toBe('3');
    expect(body).not.toContain('Item 100');
  });

  it('holds the cap on pending items per user, whichever clients send them', async () => {
    const answers: HttpResult[] = [];
    for (let n = 0; n < 6; n++) answers.push(await post(serve.port, 'capped', item(200 + n), { 'X-Forwarded-For': `198.51.100.${n + 1}` }));
    expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 202, 429, 429]);
    expect(answers[4]!.headers['retry-after']).toBe('3600');
    expect(answers[4]!.text).toContain('this user has 4 recommendations awaiting moderation');
    expect(rows(`user_id = (SELECT id FROM users WHERE username = 'capped')`)).toBe(4);
  });

  it('refuses a duplicate link for the same user with 409', async () => {
    const client = { 'X-Forwarded-For': '192.0.2.50' };
    expect((await post(serve.port, 'dup', item(300), client)).status).toBe(202);
    const again = await post(serve.port, 'dup', item(300, 'Same link, new title'), { 'X-Forwarded-For': '192.0.2.51' });
    expect(again.status).toBe(409);
    expect(rows(`user_id = (SELECT id FROM users WHERE username = 'dup')`)).toBe(1);
  });

  it('never repeats what was sent in an answer', async () => {
    const client = { 'X-Forwarded-For': '192.0.2.60' };
    const hostile = '<script>alert(1)</script>';
    const stored = await post(serve.port, 'markup', item(400, hostile), client);
    expect(stored.status).toBe(202);
    const refused = await post(serve.port, 'markup', { ...item(401, hostile), link: `javascript:${hostile}` }, client);
    expect(refused.status).toBe(400);
    expect(refused.text).toBe('link: link must use http or https\n');
    for (const answer of [stored, refused]) expect(answer.text).not.toContain('script');
  });

  it('with publishing at once turned on, stores it published (201) and the next build lists it first', async () => {
    const answer = await post(publishing.port, 'trusting', item(500, 'Published at once'), { 'X-Forwarded-For': '192.0.2.70' });
    expect(answer.status).toBe(201);
    expect(answer.headers.location).toBe('http://127.0.0.1:8080/trusting/openrecommender/');
    const built = vidfeeds('build', '--db', 'site.sqlite', '--out', 'out');
    expect(built.code, built.stderr).toBe(0);
    expect(xpath(document('trusting'), 'string(/recommendations/recommendation[1]/title)')).toBe('Published at once');
  });
});

describe('nginx in front (hosting nginx --upstream)', () => {
  it('turns a POST flood away with its own limit before it reaches vidfeeds serve', async () => {
    const reached = () => serve.log.filter((line) => line.includes('"POST /nginxed/')).length;
    const answers = await Promise.all(Array.from({ length: 20 }, (_, n) => post(nginxPort, 'nginxed', item(600 + n))));
    const byNginx = answers.filter((a) => a.status === 429 && a.text === 'too many requests from your address; try again later\n');
    // The configuration's 3 an hour become 1r/m with a burst of 2 in nginx: 3 pass at once.
    expect(byNginx.length).toBe(17);
    for (const refused of byNginx) {
      expect(refused.headers['retry-after']).toBe('60');
      expect(refused.headers['content-type']).toBe('text/plain; charset=utf-8');
    }
    expect(answers.filter((a) => a.status === 202).length).toBe(3);
    // serve logs a request once its answer is sent: the last line may still be on its way.
    for (let i = 0; i < 50 && reached() < 3; i++) await new Promise((r) => setTimeout(r, 20));
    expect(reached()).toBe(3);
    // nginx passed the client's address on, and serve counted it: 127.0.0.1, the test's.
    expect(rows(`submitter_address = '127.0.0.1'`)).toBe(3);
    // Reading is not limited.
    expect((await http(nginxPort, '/nginxed/openrecommender/')).status).toBe(200);
  });
});
