import Database from 'better-sqlite3';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { FORMATS } from '../../src/formats/registry.js';
import { routesOf } from '../../src/hosting/routes.js';
import { listen, type RunningServer } from '../../src/serve/http-server.js';
import { SiteServer } from '../../src/serve/site-server.js';
import { cli } from '../helpers/cli.js';
import { freePort, http, type HttpResult } from '../helpers/http.js';
import { apacheConfig, apacheMissing, documentedApache, startApache, type RunningApache } from '../helpers/apache.js';
import { nginxMainConfig, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { servedUrls, type ServedUrl } from '../helpers/served-urls.js';
import { createDemoDb } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * A tree built with `"compress": ["gzip", "br"]` (by the CLI, as a cron job runs it), served by
 * Debian's nginx with the configuration `vidfeeds hosting nginx` prints, by Debian's Apache 2.4
 * with the `.htaccess` `vidfeeds hosting apache` prints (set up as docs/hosting.md says) and by
 * `vidfeeds serve`.
 * For every URL form of the URL table: a client that takes gzip gets the .gz with the document's
 * Content-Type, Content-Encoding and one Vary; one that takes br gets the .br (nginx only where
 * the brotli static module is installed); one that takes neither gets the document itself; every
 * answer has its format's Cache-Control and a validator, and a conditional request gets 304.
 */

const BROTLI_MODULE = '/usr/lib/nginx/modules/ngx_http_brotli_static_module.so';
const hasBrotliModule = existsSync(BROTLI_MODULE);
if (!hasBrotliModule) {
  console.warn(`skipping the brotli rows against nginx: ${BROTLI_MODULE} is absent (Debian: apt-get install libnginx-mod-http-brotli-static; .ci/run installs it)`);
}

/** Why Apache cannot be tested here (its rows are then skipped), or null. */
const APACHE_MISSING = apacheMissing();

/** Cache-Control per URL of the URL table, written out here on purpose (docs/hosting.md has the table), with rss overridden by the configuration. */
function expectedCacheControl(url: ServedUrl): string {
  if (/\/rss\/?$/.test(url.target)) return 'public, max-age=60';
  if (/\/(openrecommender|atom|xspf|apml|opml)\/?$/.test(url.target)) return 'public, max-age=900';
  if (/\/(foaf|hcard|embed)\/?$/.test(url.target) || url.target.includes('/oembed')) return 'public, max-age=86400';
  return 'public, max-age=3600';
}

const USERS = ['alice', 'zoë'];
/** The base path of the second Apache tree, decoded: an accent and a space, as in serving.test.ts. */
const BASE_PATH = '/vídeos x';
let work: { dir: string; cleanup: () => void };
let root: string;
let videos: string[];
let nginx: RunningNginx;
let apache: RunningApache | undefined;
let serve: RunningServer;
let serveCore: SiteServer;
let db: Database.Database;
let nginxPort = 0;
let apachePort = 0;
let apacheBasePort = 0;

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

  if (APACHE_MISSING === null) {
    // One .htaccess per tree: the base path gets a copy of the tree (its .gz/.br included) with its own.
    const htaccess = (file: string) => {
      const result = cli(['hosting', 'apache', '--config', file]);
      expect(result.code, result.stderr).toBe(0);
      return result.stdout;
    };
    const based = join(work.dir, 'based');
    cpSync(root, based, { recursive: true });
    const basedConfig = join(work.dir, 'based.config.json');
    writeFileSync(basedConfig, JSON.stringify({ ...JSON.parse(readFileSync(configFile, 'utf8')), baseUrl: `http://127.0.0.1:8080${encodeURI(BASE_PATH)}` }));
    writeFileSync(join(based, '.htaccess'), htaccess(basedConfig));
    // Written after nginx started: a file of the tree like the others, which nginx never serves.
    writeFileSync(join(root, '.htaccess'), htaccess(configFile));
    const elsewhere = join(work.dir, 'elsewhere');
    mkdirSync(elsewhere);
    apachePort = await freePort();
    apacheBasePort = await freePort();
    const apachePrefix = join(work.dir, 'apache');
    mkdirSync(apachePrefix);
    const sites = [
      { port: apachePort, documentRoot: root },
      { port: apacheBasePort, documentRoot: elsewhere, aliases: { [BASE_PATH]: based } },
    ];
    const config = apacheConfig(apachePrefix, sites, [root, based], documentedApache());
    apache = await startApache(apachePrefix, config, [apachePort, apacheBasePort], [work.dir]);
  }
});

afterAll(async () => {
  await nginx?.stop();
  await apache?.stop();
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
  // The embed page's own header goes with its compressed forms too, and with no other document.
  expect(answer.headers['content-security-policy'], label).toBe(/\/embed\/?$/.test(url.target) ? 'frame-ancestors *' : undefined);
}

/** Each server: its name, where it answers once started (the base path percent-encoded), whether it can send the .br forms. */
const SERVERS: Array<[string, () => { port: number; base: string }, boolean]> = [
  ['nginx', () => ({ port: nginxPort, base: '' }), hasBrotliModule],
  ['vidfeeds serve', () => ({ port: serve.port, base: '' }), true],
];
// The .htaccess picks the .br by rewriting, with no module beyond the documented ones.
if (APACHE_MISSING === null) {
  SERVERS.push(
    ['Apache', () => ({ port: apachePort, base: '' }), true],
    ['Apache under a base path', () => ({ port: apacheBasePort, base: encodeURI(BASE_PATH) }), true],
  );
} else {
  describe('Apache 2.4 with pre-compressed files', () => {
    it.skip(`is not tested here: ${APACHE_MISSING}`, () => {});
  });
}

describe.each(SERVERS)('%s with pre-compressed files', (where, server, brotli) => {
  /** A request to this server, the target taken below its base path. */
  const get = (target: string, options?: Parameters<typeof http>[2]) => http(server().port, server().base + target, options);

  it('sends the .gz to a client that takes gzip, with the document\'s headers, for every URL form', async () => {
    const urls = servedUrls(USERS, videos);
    expect(urls.length).toBeGreaterThan(30);
    for (const url of urls) {
      const label = `${where} gzip ${url.target}`;
      const answer = await get(url.target, { headers: { 'Accept-Encoding': 'gzip' } });
      expectHeaders(answer, url, label, 'gzip');
      expect(answer.body.equals(readFileSync(join(root, `${url.file}.gz`))), `${label}: the bytes of ${url.file}.gz`).toBe(true);
      expect(gunzipSync(answer.body).equals(readFileSync(join(root, url.file))), label).toBe(true);
    }
  });

  it.runIf(brotli)('sends the .br to a client that takes br, for every URL form', async () => {
    for (const url of servedUrls(USERS, videos)) {
      const label = `${where} br ${url.target}`;
      const answer = await get(url.target, { headers: { 'Accept-Encoding': 'gzip, deflate, br' } });
      expectHeaders(answer, url, label, 'br');
      expect(answer.body.equals(readFileSync(join(root, `${url.file}.br`))), `${label}: the bytes of ${url.file}.br`).toBe(true);
      expect(brotliDecompressSync(answer.body).equals(readFileSync(join(root, url.file))), label).toBe(true);
    }
  });

  it('sends the document itself to a client that takes no encoding, or refuses gzip', async () => {
    for (const url of servedUrls(USERS, videos)) {
      for (const headers of [{}, { 'Accept-Encoding': 'identity' }, { 'Accept-Encoding': 'gzip;q=0' }] as Array<Record<string, string>>) {
        const label = `${where} ${JSON.stringify(headers)} ${url.target}`;
        const answer = await get(url.target, { headers });
        expectHeaders(answer, url, label, undefined);
        expect(answer.body.equals(readFileSync(join(root, url.file))), `${label}: the bytes of ${url.file}`).toBe(true);
      }
    }
  });

  it('answers a conditional request with 304, for the document and for its compressed form', async () => {
    for (const url of servedUrls(USERS.slice(0, 1), videos.slice(0, 1))) {
      for (const headers of [{}, { 'Accept-Encoding': 'gzip' }] as Array<Record<string, string>>) {
        const label = `${where} ${JSON.stringify(headers)} ${url.target}`;
        const first = await get(url.target, { headers });
        const etag = first.headers.etag as string;
        expect(etag, label).toMatch(/^(W\/)?"[^"]+"$/);
        const again = await get(url.target, { headers: { ...headers, 'If-None-Match': etag } });
        expect(again.status, label).toBe(304);
        expect(again.body.length, label).toBe(0);
        // No body, so nothing to decode: a Content-Encoding here would send clients decompressing nothing.
        expect(again.headers['content-encoding'], label).toBeUndefined();
        expect(again.headers.vary, label).toBe('Accept-Encoding');
        expect(again.headers['cache-control'], label).toBe(expectedCacheControl(url));
        const lastModified = first.headers['last-modified'];
        if (typeof lastModified === 'string') {
          expect((await get(url.target, { headers: { ...headers, 'If-Modified-Since': lastModified } })).status, label).toBe(304);
        }
      }
    }
  });

  it('reads Accept-Encoding as RFC 9110 says: any case, q-values, the order of preference', async () => {
    const url = servedUrls(USERS.slice(0, 1), []).find((u) => u.target === '/alice/rss/')!;
    const cases: Array<[string, 'gzip' | 'br' | undefined]> = [
      ['GZIP', 'gzip'],
      ['Gzip, BR', brotli ? 'br' : 'gzip'],
      ['br;q=0, gzip', 'gzip'],
      ['gzip;q=0.5', 'gzip'],
      ['identity, gzip;q=1.0', 'gzip'],
      ['gzip;q=0, br', brotli ? 'br' : undefined],
      ['br, gzip;Q=0', brotli ? 'br' : undefined],
      ['gzip; q=0', undefined],
      ['gzip;q=0.000', undefined],
      ['deflate', undefined],
    ];
    for (const [acceptEncoding, encoding] of cases) {
      const headers = { 'Accept-Encoding': acceptEncoding };
      const file = readFileSync(join(root, encoding === undefined ? url.file : `${url.file}${encoding === 'gzip' ? '.gz' : '.br'}`));
      const label = `${where} [${acceptEncoding}] ${url.target}`;
      const answer = await get(url.target, { headers });
      expectHeaders(answer, url, label, encoding);
      // The file's own bytes: a gzip made on the fly (mod_deflate) would not be these.
      expect(answer.body.equals(file), `${label}: the bytes of the ${encoding ?? 'plain'} file`).toBe(true);
      const head = await get(url.target, { method: 'HEAD', headers });
      expectHeaders(head, url, `HEAD ${label}`, encoding);
      expect(head.headers['content-length'], `HEAD ${label}`).toBe(String(file.length));
    }
  });

  it('never serves a compressed file under its own name', async () => {
    for (const path of ['/alice/rss/index.rss.gz', '/alice/rss/index.rss.br', '/robots.txt.gz', '/sitemap.xml.br', '/alice/rss/.gz']) {
      expect((await get(path, { headers: { 'Accept-Encoding': 'gzip, br' } })).status, `${where} ${path}`).toBe(404);
    }
  });
});

describe('vidfeeds serve with pre-compressed files, on what it renders from the database', () => {
  const [, server] = SERVERS.find(([where]) => where === 'vidfeeds serve')!;
  const get = (target: string, options?: Parameters<typeof http>[2]) => http(server().port, server().base + target, options);

  it('sends the format\'s Cache-Control with what it renders from the database', async () => {
    const many = await get('/alice/openrecommender/?recommendations=2', { headers: { 'Accept-Encoding': 'gzip' } });
    expect(many.status).toBe(200);
    expect(many.headers['cache-control']).toBe('public, max-age=900');
    const sized = await get(`/${videos[0]}/oembed/?maxwidth=200`);
    expect(sized.status).toBe(200);
    expect(sized.headers['cache-control']).toBe('public, max-age=86400');
  });
});
