import Database from 'better-sqlite3';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { BuildState } from '../../src/pipeline/build-state.js';
import { runBuild } from '../../src/pipeline/run-build.js';
import type { SiteConfig } from '../../src/config/site-config.js';
import { DirectoryWriter } from '../../src/pipeline/write/output-writer.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { FORMATS } from '../../src/formats/registry.js';
import { RECOMMENDATION_POST_MAX_BYTES, routesOf } from '../../src/hosting/routes.js';
import { callbackProblem } from '../../src/serve/jsonp.js';
import { acceptsGzip, etagMatches } from '../../src/serve/responses.js';
import { SiteServer, type ServeRequest } from '../../src/serve/site-server.js';
import { http } from '../helpers/http.js';
import { startServe } from '../helpers/serve-process.js';
import { createTestDb, insertRow, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';
import { jing, SCHEMAS } from '../helpers/validators.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';

/**
 * `vidfeeds serve`: the core answered without a socket (one request in, one response out), on a
 * small site of each test's own, and the command itself over loopback HTTP.
 */

interface Site {
  server: SiteServer;
  db: Database.Database;
  dbFile: string;
  get(target: string, headers?: Record<string, string>): ReturnType<SiteServer['handle']>;
  post(target: string, form: string | Record<string, string>, headers?: Record<string, string>): ReturnType<SiteServer['handle']>;
}

/** A site with one uploader (`uploader`, public video `pub`, private `priv`) built into a folder. */
function site(config: SiteConfig = testConfig()): Site {
  const fixture = createTestDb();
  const work = tempDir('vidfeeds-serve-');
  cleanUpAfterTest(fixture.cleanup, work.cleanup);
  const u = insertUser(fixture.db, { username: 'uploader' });
  insertVideo(fixture.db, u.id, { public_id: 'pub', title: 'Public <clip>' });
  insertVideo(fixture.db, u.id, { public_id: 'priv', visibility: 'private' });
  for (let i = 0; i < 12; i++) {
    insertRow(fixture.db, 'recommendations', { user_id: u.id, title: `Rec ${i}`, link: `https://r.example/${i}`, image: `https://r.example/${i}.jpg`, created_at: T0 + i });
  }
  const root = join(work.dir, 'out');
  const siteContext = createSiteContext(config, FORMATS, new Date(Date.UTC(2026, 0, 1)));
  const readDb = new Database(fixture.file, { readonly: true });
  const writer = new DirectoryWriter(root);
  const state = new BuildState(':memory:');
  runBuild({ reader: new SiteReader(readDb, readLimits(config.recommendationsCount)), writer, state, site: siteContext, formats: FORMATS });
  writer.close();
  state.close();
  const server = new SiteServer({
    root,
    site: siteContext,
    routes: routesOf(FORMATS),
    db: readDb,
    openForWriting: () => new Database(fixture.file),
    now: () => new Date(Date.UTC(2026, 1, 2)),
  });
  cleanUpAfterTest(() => {
    server.close();
    readDb.close();
  });
  const handle = (request: ServeRequest) => server.handle(request);
  return {
    server,
    db: fixture.db,
    dbFile: fixture.file,
    get: (target, headers = {}) => handle({ method: 'GET', target, headers: lower(headers) }),
    post: (target, form, headers = { 'Content-Type': 'application/x-www-form-urlencoded' }) =>
      handle({ method: 'POST', target, headers: lower(headers), body: Buffer.from(typeof form === 'string' ? form : new URLSearchParams(form).toString()) }),
  };
}

function lower(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

const text = (r: { body: Buffer }) => r.body.toString('utf8');
const PAGE = 'https://videos.example.org/pub/embed/';

describe('oEmbed parameters', () => {
  it('answers url, maxwidth/maxheight and the seed width/height from the database, within bounds', () => {
    const s = site();
    const plain = s.get(`/pub/oembed/?url=${encodeURIComponent(PAGE)}`);
    expect(plain.status, text(plain)).toBe(200);
    expect(plain.headers['Content-Type']).toBe('application/json; charset=utf-8');
    const full = JSON.parse(text(plain));
    expect(full).toMatchObject({ version: '1.0', type: 'video', title: 'Public <clip>', width: 400, height: 300 });
    for (const query of ['maxwidth=200', 'width=200', 'maxwidth=200&maxheight=500', 'maxheight=150']) {
      const r = JSON.parse(text(s.get(`/pub/oembed/?${query}`)));
      expect(r.width, query).toBeLessThanOrEqual(200);
      expect(r.height, query).toBeLessThanOrEqual(150);
      expect(r.html, query).toContain(`${r.width}`);
    }
    // The XML form with parameters: valid against the oEmbed schema.
    const xml = s.get(`/pub/oembed/?format=xml&maxwidth=100&url=${encodeURIComponent(PAGE)}`);
    expect(xml.headers['Content-Type']).toBe('text/xml; charset=utf-8');
    expect(jing(join(SCHEMAS, 'oembed-1.0-response.rng'), { xml: text(xml) }).output).toBe('');
    const html = s.get('/pub/oembed/html?maxwidth=120');
    expect(html.headers['Content-Type']).toBe('text/html; charset=utf-8');
    // The HTML form is the bare markup, fitted: byte for byte the JSON's html at the same size, an
    // iframe of the embed page (which fills whatever frame it is given) at the fitted size.
    expect(text(html)).toMatch(/^<iframe src="https:\/\/videos\.example\.org\/pub\/embed\/" width="120" height="90" /);
    expect(text(html)).toBe(JSON.parse(text(s.get('/pub/oembed/?maxwidth=120'))).html);
  });

  it('gives oEmbed 1.0 status codes: 404 unknown video or foreign url, 401 private, 501 format', () => {
    const s = site();
    expect(s.get('/nope/oembed/?maxwidth=100').status).toBe(404);
    expect(s.get('/priv/oembed/?maxwidth=100').status).toBe(401);
    expect(s.get(`/pub/oembed/?url=${encodeURIComponent('https://elsewhere.example/pub/')}`).status).toBe(404);
    expect(s.get(`/pub/oembed/?url=${encodeURIComponent('https://videos.example.org/uploader/rss/')}`).status).toBe(404);
    expect(s.get(`/pub/oembed/?url=${encodeURIComponent('https://videos.example.org/priv/embed/')}`).status).toBe(404);
    expect(s.get(`/pub/oembed/?url=not-a-url`).status).toBe(404);
    expect(s.get('/pub/oembed/?format=yaml&maxwidth=5').status).toBe(501);
    // The page URL on http instead of https, with a fragment, still names the video.
    expect(s.get(`/pub/oembed/?url=${encodeURIComponent('http://VIDEOS.example.org/pub/embed#t=3')}`).status).toBe(200);
    for (const bad of ['maxwidth=0', 'maxwidth=-1', 'maxwidth=abc', 'width=1e3', 'height=99999']) {
      const r = s.get(`/pub/oembed/?${bad}`);
      expect(r.status, bad).toBe(400);
      expect(text(r)).toMatch(/^(max)?(width|height) must be/);
    }
  });

  it('takes the page URL in every form that names the same page, and no other page', () => {
    const pages = { ...testConfig().pages, video: '{base}/watch/{video}/' };
    const s = site(testConfig({ baseUrl: 'https://videos.example.org/v%C3%ADdeos', pages }));
    const endpoint = (url: string) => s.get(`/v%C3%ADdeos/pub/oembed/?url=${encodeURIComponent(url)}`).status;
    const named = [
      'https://videos.example.org/v%C3%ADdeos/watch/pub/',
      'https://videos.example.org/v%C3%ADdeos/watch/pub',
      'http://videos.example.org/v%C3%ADdeos/watch/pub/',
      'https://VIDEOS.example.org:443/v%C3%ADdeos/watch/pub',
      'https://videos.example.org/v%c3%addeos/watch/%70ub/',
      'https://videos.example.org/vídeos/watch/pub/?utm_source=feed#t=3',
      '  https://videos.example.org/v%C3%ADdeos/watch/pub/ ',
    ];
    for (const url of named) expect(endpoint(url), url).toBe(200);
    const others = [
      'https://videos.example.org/v%C3%ADdeos/watch/priv/',
      'https://videos.example.org/v%C3%ADdeos/watch/pub/more',
      'https://videos.example.org/v%C3%ADdeos/watch/',
      'https://videos.example.org/videos/watch/pub/',
      'https://videos.example.org:8443/v%C3%ADdeos/watch/pub/',
      'ftp://videos.example.org/v%C3%ADdeos/watch/pub/',
      'https://videos.example.org/v%C3%ADdeos/watch/p%ZZub/',
    ];
    for (const url of others) expect(endpoint(url), url).toBe(404);
    // A template whose id is a query parameter: other parameters may come along, in any order.
    const query = site(testConfig({ pages: { ...testConfig().pages, video: '{base}/watch?v={video}' } }));
    const q = (url: string) => query.get(`/pub/oembed/?url=${encodeURIComponent(url)}`).status;
    expect(q('https://videos.example.org/watch?v=pub')).toBe(200);
    expect(q('http://videos.example.org/watch?list=x&v=%70ub')).toBe(200);
    expect(q('https://videos.example.org/watch?v=priv')).toBe(404);
    expect(q('https://videos.example.org/watch')).toBe(404);
    expect(q('https://videos.example.org/watch?v=pub&v=pub')).toBe(404);
  });

  it('wraps JSON in a strictly named callback, as JavaScript that calls it', () => {
    const s = site();
    const r = s.get('/pub/oembed/?callback=my.handle_1');
    expect(r.status).toBe(200);
    expect(r.headers['Content-Type']).toBe('application/javascript; charset=utf-8');
    expect(r.headers['X-Content-Type-Options']).toBe('nosniff');
    const seen: unknown[] = [];
    runInNewContext(text(r), { my: { handle_1: (value: unknown) => seen.push(value) } });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ type: 'video', title: 'Public <clip>' });
    expect(s.get('/pub/oembed/?format=xml&callback=cb').status).toBe(400);
  });

  it.each([
    'alert(1)',
    'a;b',
    'a b',
    'cb//',
    '<script>',
    'a[0]',
    "a'b",
    'a"b',
    '\\u0061',
    'é',
    '1abc',
    'a..b',
    '.a',
    'a.',
    'constructor',
    'x.__proto__',
    'function',
    'a'.repeat(129),
    'cb\nalert(1)',
  ])('refuses the callback name %j with 400', (name) => {
    const s = site();
    expect(callbackProblem(name)).not.toBeNull();
    const r = s.get(`/pub/oembed/?callback=${encodeURIComponent(name)}`);
    expect(r.status).toBe(400);
    expect(r.headers['Content-Type']).toBe('text/plain; charset=utf-8');
  });
});

describe('?recommendations=N', () => {
  it('lists N recommendations, from 1 to 100, newest first; other values get 400', () => {
    const s = site();
    const count = (r: { body: Buffer }) => text(r).match(/<recommendation[ >]/g)?.length ?? 0;
    expect(count(s.get('/uploader/openrecommender/'))).toBe(8);
    expect(count(s.get('/uploader/openrecommender/?recommendations=3'))).toBe(3);
    expect(count(s.get('/uploader/openrecommender/?recommendations=100'))).toBe(12);
    expect(text(s.get('/uploader/openrecommender/?recommendations=1'))).toContain('Rec 11');
    for (const bad of ['0', '101', '-1', 'x', '2.5']) expect(s.get(`/uploader/openrecommender/?recommendations=${bad}`).status, bad).toBe(400);
    expect(s.get('/nobody/openrecommender/?recommendations=3').status).toBe(404);
  });
});

describe('the recommendation POST', () => {
  const valid = { title: 'A <good> one', image: 'https://img.example/a.jpg', link: 'https://vid.example/a', description: 'Nice & short' };

  it('holds a valid recommendation for moderation: 202 with its id and status, repeating nothing sent', () => {
    const s = site();
    const r = s.post('/uploader/openrecommender/', { ...valid, link: 'https://vid.example/<script>alert(1)</script>' });
    expect(r.status, text(r)).toBe(202);
    expect(r.headers['Content-Type']).toBe('application/xml; charset=utf-8');
    expect(r.headers.Location).toBe('https://videos.example.org/uploader/openrecommender/');
    const id = s.db.prepare<[], { id: number }>('SELECT max(id) AS id FROM recommendations').get()!.id;
    expect(text(r)).toBe(`<?xml version="1.0" encoding="UTF-8"?><recommendation id="${id}" status="pending"/>\n`);
    expect(text(s.get('/uploader/openrecommender/?recommendations=100'))).not.toContain('good');
  });

  it('publishes at once when the configuration says so: 201, and the list shows it first', () => {
    const config = testConfig();
    config.recommendationSubmit.publishAtOnce = true;
    const s = site(config);
    const r = s.post('/uploader/openrecommender/', valid);
    expect(r.status, text(r)).toBe(201);
    expect(text(r)).toMatch(/<recommendation id="\d+" status="approved"\/>\n$/);
    const list = s.get('/uploader/openrecommender/?recommendations=1');
    expect(text(list)).toContain('A &lt;good&gt; one');
  });

  it('refuses the same link twice (409) and answers 429 with Retry-After past the per-client rate', () => {
    const config = testConfig();
    config.recommendationSubmit.perClient = { limit: 2, windowSeconds: 600, maxPending: 10 };
    const s = site(config);
    const from = (address: string, n: number) => s.server.handle({
      method: 'POST',
      target: '/uploader/openrecommender/',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: Buffer.from(new URLSearchParams({ ...valid, link: `https://vid.example/${n}` }).toString()),
      remoteAddress: address,
    });
    expect(from('192.0.2.1', 1).status).toBe(202);
    expect(from('192.0.2.2', 1).status).toBe(409);
    expect(from('192.0.2.1', 2).status).toBe(202);
    const limited = from('192.0.2.1', 3);
    expect(limited.status).toBe(429);
    expect(limited.headers['Retry-After']).toBe('600');
    expect(text(limited)).toContain('this address has sent 2 recommendations in 600 seconds');
    expect(from('::ffff:192.0.2.1', 4).status).toBe(429);
    expect(from('192.0.2.3', 3).status).toBe(202);
    expect(s.db.prepare('SELECT count(*) AS n FROM recommendations').get()).toEqual({ n: 15 });
  });

  it('believes X-Forwarded-For only from a trusted proxy, read from the right', () => {
    const config = testConfig();
    config.recommendationSubmit.perClient = { limit: 1, windowSeconds: 600, maxPending: 10 };
    config.recommendationSubmit.trustedProxies = ['127.0.0.1', '10.0.0.0/8'];
    const s = site(config);
    let n = 0;
    const post = (remoteAddress: string, forwardedFor?: string) => s.server.handle({
      method: 'POST',
      target: '/uploader/openrecommender/',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }) },
      body: Buffer.from(new URLSearchParams({ ...valid, link: `https://vid.example/${++n}` }).toString()),
      remoteAddress,
    });
    const submitters = () => s.db.prepare<[], { a: string }>('SELECT submitter_address AS a FROM recommendations WHERE submitter_address IS NOT NULL ORDER BY id').all().map((r) => r.a);
    expect(post('127.0.0.1', '198.51.100.1').status).toBe(202);
    // A client's own X-Forwarded-For is left of what nginx appends; the rightmost untrusted hop counts.
    expect(post('127.0.0.1', '198.51.100.1, 198.51.100.2').status).toBe(202);
    expect(post('127.0.0.1', '203.0.113.5, 198.51.100.1, 10.1.2.3').status).toBe(429);
    // Anyone else's header is not believed: counted under the connection's own address.
    expect(post('192.0.2.9', '198.51.100.3').status).toBe(202);
    expect(post('192.0.2.9', '198.51.100.4').status).toBe(429);
    expect(post('127.0.0.1', 'not-an-address').status).toBe(400);
    expect(submitters()).toEqual(['198.51.100.1', '198.51.100.2', '192.0.2.9']);
  });

  it.each([
    [{ ...valid, title: '' }, 'title'],
    [{ image: valid.image, link: valid.link }, 'title'],
    [{ ...valid, image: 'javascript:alert(1)' }, 'image'],
    [{ ...valid, link: '/relative' }, 'link'],
    [{ ...valid, link: undefined }, 'link'],
  ] as Array<[Record<string, string | undefined>, string]>)('answers 400 naming the bad field (%#)', (form, field) => {
    const s = site();
    const clean = Object.fromEntries(Object.entries(form).filter(([, v]) => v !== undefined)) as Record<string, string>;
    const r = s.post('/uploader/openrecommender/', clean);
    expect(r.status).toBe(400);
    expect(text(r).startsWith(`${field}:`), text(r)).toBe(true);
    expect(s.db.prepare('SELECT count(*) AS n FROM recommendations').get()).toEqual({ n: 12 });
  });

  it('answers 404 for an unknown or unpublished user, 413 past the limit, 415 for another encoding, 405 elsewhere', () => {
    const s = site();
    insertUser(s.db, { username: 'gone', state: 'suspended' });
    expect(s.post('/nobody/openrecommender/', valid).status).toBe(404);
    expect(s.post('/gone/openrecommender/', valid).status).toBe(404);
    expect(s.post('/uploader/openrecommender/', `title=${'x'.repeat(RECOMMENDATION_POST_MAX_BYTES)}`).status).toBe(413);
    expect(s.post('/uploader/openrecommender/', JSON.stringify(valid), { 'Content-Type': 'application/json' }).status).toBe(415);
    expect(s.post('/uploader/openrecommender/', `${new URLSearchParams(valid)}&title=again`).status).toBe(400);
    const elsewhere = s.post('/uploader/rss/', valid);
    expect(elsewhere.status).toBe(405);
    expect(elsewhere.headers.Allow).toBe('GET, HEAD');
    expect(s.db.prepare('SELECT count(*) AS n FROM recommendations').get()).toEqual({ n: 12 });
  });
});

describe('as a web server', () => {
  it('serves under a base path with a path, and nothing outside it', () => {
    const s = site(testConfig({ baseUrl: 'https://videos.example.org/my%20videos' }));
    expect(s.get('/my%20videos/uploader/rss/').status).toBe(200);
    expect(s.get('/my videos/uploader/rss/').status).toBe(200);
    expect(s.get('/uploader/rss/').status).toBe(404);
    expect(s.get('/my%20videos/pub/oembed/?maxwidth=50').status).toBe(200);
  });

  it('negotiates gzip and ETags like nginx', () => {
    expect(acceptsGzip('gzip, deflate, br')).toBe(true);
    expect(acceptsGzip('br;q=1, gzip;q=0')).toBe(false);
    expect(acceptsGzip('*;q=0.5')).toBe(true);
    expect(acceptsGzip('identity')).toBe(false);
    expect(etagMatches('W/"abc", "def"', '"abc"')).toBe(true);
    expect(etagMatches('"abc-gzip"', '"abc"')).toBe(false);
    expect(etagMatches('*', '"x"')).toBe(true);
    const s = site();
    const zipped = s.get('/uploader/rss/', { 'Accept-Encoding': 'gzip' });
    const plain = s.get('/uploader/rss/');
    expect(zipped.headers.ETag).not.toBe(plain.headers.ETag);
    expect(s.get('/uploader/rss/', { 'If-None-Match': plain.headers.ETag! }).status).toBe(304);
    expect(s.get('/uploader/rss/', { 'Accept-Encoding': 'gzip', 'If-None-Match': zipped.headers.ETag! }).status).toBe(304);
    // A dynamic answer gets its ETag too.
    const dynamic = s.get('/pub/oembed/?maxwidth=80');
    expect(s.get('/pub/oembed/?maxwidth=80', { 'If-None-Match': dynamic.headers.ETag! }).status).toBe(304);
  });

  it('dates every file with Last-Modified and answers the conditions of a request as nginx does', () => {
    const s = site();
    const plain = s.get('/uploader/rss/');
    const lastModified = plain.headers['Last-Modified']!;
    expect(new Date(lastModified).toUTCString()).toBe(lastModified);
    const etag = plain.headers.ETag!;
    const status = (headers: Record<string, string>) => s.get('/uploader/rss/', headers).status;
    const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
    const later = new Date(Date.parse(lastModified) + 1000).toUTCString();
    expect(status({ 'If-Modified-Since': lastModified })).toBe(304);
    // nginx's `if_modified_since exact`: another date, earlier or later, gets the document.
    expect(status({ 'If-Modified-Since': earlier })).toBe(200);
    expect(status({ 'If-Modified-Since': later })).toBe(200);
    expect(status({ 'If-Modified-Since': 'yesterday' })).toBe(200);
    // Both sent: both must hold.
    expect(status({ 'If-Modified-Since': lastModified, 'If-None-Match': etag })).toBe(304);
    expect(status({ 'If-Modified-Since': earlier, 'If-None-Match': etag })).toBe(200);
    expect(status({ 'If-Modified-Since': lastModified, 'If-None-Match': '"other"' })).toBe(200);
    expect(status({ 'If-Unmodified-Since': lastModified })).toBe(200);
    expect(status({ 'If-Unmodified-Since': earlier })).toBe(412);
    expect(status({ 'If-Unmodified-Since': 'not a date' })).toBe(412);
    expect(status({ 'If-Match': etag })).toBe(200);
    expect(status({ 'If-Match': '"other"' })).toBe(412);
    const notModified = s.get('/uploader/rss/', { 'If-Modified-Since': lastModified });
    expect(notModified.headers).toMatchObject({ 'Last-Modified': lastModified, ETag: etag, 'X-Content-Type-Options': 'nosniff' });
    expect(notModified.body.length).toBe(0);
    expect(s.get('/uploader/rss/', { 'If-Match': '"other"' }).headers['X-Content-Type-Options']).toBe('nosniff');
    // An answer made from the database has no file to date: no Last-Modified, and If-Modified-Since never matches.
    const dynamic = s.get('/pub/oembed/?maxwidth=80');
    expect(dynamic.headers['Last-Modified']).toBeUndefined();
    expect(s.get('/pub/oembed/?maxwidth=80', { 'If-Modified-Since': lastModified }).status).toBe(200);
  });

  it('sends nosniff with every error', () => {
    const s = site();
    for (const target of ['/nope/', '/pub/oembed/?format=yaml', '/pub/oembed/?url=%3Cscript%3E', '/priv/oembed/?maxwidth=9', '/uploader/rss/?x', '/uploader/openrecommender/?recommendations=0']) {
      const r = s.get(target);
      if (r.status < 400) continue;
      expect(r.headers['X-Content-Type-Options'], target).toBe('nosniff');
      expect(r.headers['Content-Type'], target).toBe('text/plain; charset=utf-8');
    }
    expect(s.post('/uploader/openrecommender/', 'title=', { 'Content-Type': 'text/html' }).headers['X-Content-Type-Options']).toBe('nosniff');
  });
});

describe('vidfeeds serve, the command', () => {
  it('listens on loopback, answers, and stops on SIGTERM with exit code 0', async () => {
    const s = site(testConfig({ baseUrl: 'http://127.0.0.1:9/base' }));
    const work = tempDir('vidfeeds-serve-cli-');
    const out = join(work.dir, 'out');
    {
      // Build with the same base URL through the CLI, as an operator would.
      const { cli } = await import('../helpers/cli.js');
      const built = cli(['build', '--db', s.dbFile, '--out', out, '--base-url', 'http://127.0.0.1:9/base']);
      expect(built.code, built.stderr).toBe(0);
    }
    const { port, child, log, exited } = await startServe(['--db', s.dbFile, '--out', out, '--base-url', 'http://127.0.0.1:9/base']);
    const stderr = () => log.join('\n');
    const watchdog = setTimeout(() => child.kill('SIGKILL'), 60_000);
    try {
      const feed = await http(port, '/base/uploader/atom/');
      expect(feed.status).toBe(200);
      expect(feed.headers['content-type']).toBe('application/atom+xml; charset=utf-8');
      const head = await http(port, '/base/uploader/atom', { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.body.length).toBe(0);
      expect(head.headers['content-length']).toBe(String(feed.body.length));
      const post = await http(port, '/base/uploader/openrecommender/', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': String(RECOMMENDATION_POST_MAX_BYTES + 1) },
        body: 'x'.repeat(RECOMMENDATION_POST_MAX_BYTES + 1),
      });
      expect(post.status).toBe(413);
      const chunked = await http(port, '/base/uploader/openrecommender/', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: 'x'.repeat(RECOMMENDATION_POST_MAX_BYTES * 2),
      });
      expect(chunked.status).toBe(413);
    } finally {
      child.kill('SIGTERM');
      expect(await exited, stderr()).toBe(0);
      clearTimeout(watchdog);
    }
    expect(stderr()).toContain(`serving ${out} at http://127.0.0.1:${port}/base/`);
    // The access log: ISO 8601 time, client, method and path, status, bytes, duration.
    expect(stderr()).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z vidfeeds: 127\.0\.0\.1 "GET \/base\/uploader\/atom\/" 200 \d+ \d+\.\dms$/m);
    expect(stderr()).toMatch(/ vidfeeds: 127\.0\.0\.1 "HEAD \/base\/uploader\/atom" 200 0 /);
    expect(stderr()).toMatch(/ vidfeeds: 127\.0\.0\.1 "POST \/base\/uploader\/openrecommender\/" 413 /);
  });

  it('refuses a port in use with exit code 2 and a hint', async () => {
    const s = site();
    const { createServer } = await import('node:net');
    const blocker = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    const { port } = blocker.address() as { port: number };
    try {
      const { cli } = await import('../helpers/cli.js');
      const work = tempDir('vidfeeds-serve-busy-');
      const result = cli(['serve', '--db', s.dbFile, '--out', work.dir, '--port', String(port)]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`port ${port} on 127.0.0.1 is in use`);
    } finally {
      blocker.close();
    }
  });
});
