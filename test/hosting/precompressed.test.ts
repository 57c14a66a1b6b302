import Database from 'better-sqlite3';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSiteContext } from '../../src/build/site-context.js';
import { loadConfig } from '../../src/config/config.js';
import { FORMATS } from '../../src/formats/registry.js';
import { routesOf } from '../../src/hosting/routes.js';
import { listen, type RunningServer } from '../../src/serve/http-server.js';
import { SiteServer } from '../../src/serve/site-server.js';
import { cli } from '../helpers/cli.js';
import { freePort, http, type HttpResult } from '../helpers/http.js';
import { nginxMainConfig, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { servedUrls, type ServedUrl } from '../helpers/served-urls.js';
import { createDemoDb, tempDir } from '../helpers/site-fixture.js';

/**
 * A tree built with `"compress": ["gzip", "br"]` (by the CLI, as a cron job runs it), served by
 * Debian's nginx with the configuration `vidfeeds hosting nginx` prints and by `vidfeeds serve`.
 * For every URL form of PRODUCT.md: a client that takes gzip gets the .gz with the document's
 * Content-Type, Content-Encoding and one Vary; one that takes br gets the .br (nginx only where
 * the brotli static module is installed); one that takes neither gets the document itself; every
 * answer has its format's Cache-Control and a validator, and a conditional request gets 304.
 */

const BROTLI_MODULE = '/usr/lib/nginx/modules/ngx_http_brotli_static_module.so';
const hasBrotliModule = existsSync(BROTLI_MODULE);
if (!hasBrotliModule) {
  console.warn(`skipping the brotli rows against nginx: ${BROTLI_MODULE} is absent (Debian: apt-get install libnginx-mod-http-brotli-static; .ci/run installs it)`);
}

/** Cache-Control per URL of PRODUCT.md, written out here on purpose (docs/deploy.md has the table), with rss overridden by the configuration. */
function expectedCacheControl(url: ServedUrl): string {
  if (/\/rss\/?$/.test(url.target)) return 'public, max-age=60';
  if (/\/(openrecommender|atom|xspf|apml|opml)\/?$/.test(url.target)) return 'public, max-age=900';
  if (/\/(foaf|hcard)\/?$/.test(url.target) || url.target.includes('/oembed')) return 'public, max-age=86400';
  return 'public, max-age=3600';
}

const USERS = ['alice', 'zoë'];
let work: { dir: string; cleanup: () => void };
let root: string;
let videos: string[];
let nginx: RunningNginx;
let serve: RunningServer;
let serveCore: SiteServer;
let db: Database.Database;
let nginxPort = 0;

beforeAll(async () => {
  work = tempDir('vidfeeds-precompressed-');
  const fixture = createDemoDb({ users: 10, seed: 4 });
  fixture.db.close();
  const dbFile = join(work.dir, 'site.sqlite');
  writeFileSync(dbFile, readFileSync(fixture.file));
  fixture.cleanup();
  const configFile = join(work.dir, 'vidfeeds.config.json');
  writeFileSync(
    configFile,
    JSON.stringify({ baseUrl: 'http://127.0.0.1:8080', compress: ['gzip', 'br'], cacheControl: { formats: { rss: 'public, max-age=60' } } }),
  );
  root = join(work.dir, 'out');
  const built = cli(['build', '--db', dbFile, '--out', root, '--config', configFile]);
  expect(built.code, built.stderr).toBe(0);

  db = new Database(dbFile, { readonly: true });
  videos = db
    .prepare<[], { public_id: string }>(
      `SELECT v.public_id FROM videos v JOIN users u ON u.id = v.user_id
       WHERE v.visibility = 'public' AND u.state = 'active' AND u.username = 'alice' ORDER BY v.public_id LIMIT 2`,
    )
    .all()
    .map((r) => r.public_id);

  const config = loadConfig({ configFile });
  serveCore = new SiteServer({ root, site: createSiteContext(config, FORMATS), routes: routesOf(FORMATS), db, openForWriting: () => new Database(dbFile) });
  serve = await listen(serveCore, { host: '127.0.0.1', port: 0 });

  nginxPort = await freePort();
  const generated = cli([
    'hosting', 'nginx', '--root', root, '--listen', `127.0.0.1:${nginxPort}`, '--config', configFile,
    ...(hasBrotliModule ? ['--brotli-static'] : []),
  ]);
  expect(generated.code, generated.stderr).toBe(0);
  const prefix = join(work.dir, 'nginx');
  mkdirSync(prefix);
  const main = nginxMainConfig(prefix, generated.stdout);
  nginx = await startNginx(prefix, hasBrotliModule ? `load_module ${BROTLI_MODULE};\n${main}` : main, [nginxPort]);
});

afterAll(async () => {
  await nginx?.stop();
  await serve?.close();
  serveCore?.close();
  db?.close();
  work?.cleanup();
});

function expectHeaders(answer: HttpResult, url: ServedUrl, label: string, encoding: string | undefined): void {
  expect(answer.status, label).toBe(200);
  expect(answer.headers['content-type'], label).toBe(url.type);
  expect(answer.headers['content-encoding'], label).toBe(encoding);
  // Exactly once: a second Vary from another module would arrive joined (`Accept-Encoding, Accept-Encoding`).
  expect(answer.headers.vary, label).toBe('Accept-Encoding');
  expect(answer.headers['cache-control'], label).toBe(expectedCacheControl(url));
  expect(answer.headers.etag ?? answer.headers['last-modified'], `${label}: a validator`).toBeDefined();
}

describe.each([
  ['nginx', () => nginxPort, hasBrotliModule],
  ['vidfeeds serve', () => serve.port, true],
])('%s with pre-compressed files', (where, port, brotli) => {
  it('sends the .gz to a client that takes gzip, with the document\'s headers, for every URL form', async () => {
    const urls = servedUrls(USERS, videos);
    expect(urls.length).toBeGreaterThan(30);
    for (const url of urls) {
      const label = `${where} gzip ${url.target}`;
      const answer = await http(port(), url.target, { headers: { 'Accept-Encoding': 'gzip' } });
      expectHeaders(answer, url, label, 'gzip');
      expect(answer.body.equals(readFileSync(join(root, `${url.file}.gz`))), `${label}: the bytes of ${url.file}.gz`).toBe(true);
      expect(gunzipSync(answer.body).equals(readFileSync(join(root, url.file))), label).toBe(true);
    }
  });

  it.runIf(brotli)('sends the .br to a client that takes br, for every URL form', async () => {
    for (const url of servedUrls(USERS, videos)) {
      const label = `${where} br ${url.target}`;
      const answer = await http(port(), url.target, { headers: { 'Accept-Encoding': 'gzip, deflate, br' } });
      expectHeaders(answer, url, label, 'br');
      expect(answer.body.equals(readFileSync(join(root, `${url.file}.br`))), `${label}: the bytes of ${url.file}.br`).toBe(true);
      expect(brotliDecompressSync(answer.body).equals(readFileSync(join(root, url.file))), label).toBe(true);
    }
  });

  it('sends the document itself to a client that takes no encoding, or refuses gzip', async () => {
    for (const url of servedUrls(USERS, videos)) {
      for (const headers of [{}, { 'Accept-Encoding': 'identity' }, { 'Accept-Encoding': 'gzip;q=0' }] as Array<Record<string, string>>) {
        const label = `${where} ${JSON.stringify(headers)} ${url.target}`;
        const answer = await http(port(), url.target, { headers });
        expectHeaders(answer, url, label, undefined);
        expect(answer.body.equals(readFileSync(join(root, url.file))), `${label}: the bytes of ${url.file}`).toBe(true);
      }
    }
  });

  it('answers a conditional request with 304, for the document and for its compressed form', async () => {
    for (const url of servedUrls(USERS.slice(0, 1), videos.slice(0, 1))) {
      for (const headers of [{}, { 'Accept-Encoding': 'gzip' }] as Array<Record<string, string>>) {
        const label = `${where} ${JSON.stringify(headers)} ${url.target}`;
        const first = await http(port(), url.target, { headers });
        const etag = first.headers.etag as string;
        expect(etag, label).toMatch(/^(W\/)?"[^"]+"$/);
        const again = await http(port(), url.target, { headers: { ...headers, 'If-None-Match': etag } });
        expect(again.status, label).toBe(304);
        expect(again.body.length, label).toBe(0);
        expect(again.headers['cache-control'], label).toBe(expectedCacheControl(url));
        const lastModified = first.headers['last-modified'];
        if (typeof lastModified === 'string') {
          expect((await http(port(), url.target, { headers: { ...headers, 'If-Modified-Since': lastModified } })).status, label).toBe(304);
        }
      }
    }
  });

  it.runIf(where === 'vidfeeds serve')('sends the format\'s Cache-Control with what it renders from the database', async () => {
    const many = await http(port(), '/alice/openrecommender/?recommendations=2', { headers: { 'Accept-Encoding': 'gzip' } });
    expect(many.status).toBe(200);
    expect(many.headers['cache-control']).toBe('public, max-age=900');
    const sized = await http(port(), `/${videos[0]}/oembed/?maxwidth=200`);
    expect(sized.status).toBe(200);
    expect(sized.headers['cache-control']).toBe('public, max-age=86400');
  });

  it('never serves a compressed file under its own name', async () => {
    for (const path of ['/alice/rss/index.rss.gz', '/alice/rss/index.rss.br', '/robots.txt.gz', '/sitemap.xml.br', '/alice/rss/.gz']) {
      expect((await http(port(), path, { headers: { 'Accept-Encoding': 'gzip, br' } })).status, `${where} ${path}`).toBe(404);
    }
  });
});
