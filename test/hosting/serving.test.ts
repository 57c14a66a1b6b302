import Database from 'better-sqlite3';
import { cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRecordName } from '../../src/pipeline/record/build-record.js';
import { DirectoryWriter } from '../../src/pipeline/write/output-writer.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { FORMATS } from '../../src/formats/registry.js';
import { APACHE_ALLOW_OVERRIDE } from '../../src/hosting/apache.js';
import { routesOf } from '../../src/hosting/routes.js';
import { listen, type RunningServer } from '../../src/serve/http-server.js';
import { SiteServer } from '../../src/serve/site-server.js';
import { apacheConfig, apacheMissing, documentedApache, startApache, type RunningApache } from '../helpers/apache.js';
import { cli } from '../helpers/cli.js';
import { freePort, http } from '../helpers/http.js';
import { nginxMainConfig, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { expectBodiesParse, expectServed, URL_TABLE, REFUSED_PATHS, servedUrls, type ArchivePageOf } from '../helpers/served-urls.js';
import { buildInMemory, createDemoDb, insertRow, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The tree as hosts serve it: a demo build in a temporary folder, Debian's nginx with the
 * configuration `vidfeeds hosting nginx` prints (at the root, under a base path, and with the
 * operator options on), Debian's Apache 2.4 with the `.htaccess` `vidfeeds hosting apache` prints
 * (at the root and under a base path, set up as docs/hosting.md says), and `vidfeeds serve`, all on
 * loopback ports. One table of tests runs against each: every URL form of the URL table
 * (docs/formats.md) for several users and videos must come back with status 200, its exact
 * Content-Type and the file's bytes; tricks and hidden files must get 404.
 */

const ODD_USER = `o'd "n?#%&+;=@$`;
const ODD_VIDEO = 'v i?d#%&+';
const USERS = ['alice', 'bob', 'مريم', 'zoë', '山田太郎', '🎬astral', 'mallory', ODD_USER];
const BASE_PATH = '/vídeos x';
/** The archive pages served: every one of the odd user's, as the build wrote them. */
let archives: ArchivePageOf[];

let work: { dir: string; cleanup: () => void };
let root: string;
let videos: string[];
let nginx: RunningNginx;
let apache: RunningApache | undefined;
let serve: RunningServer;
let serveCore: SiteServer;
let db: Database.Database;
const port = { root: 0, base: 0, options: 0, apacheRoot: 0, apacheBase: 0 };

/** Why Apache cannot be tested here (its tests are then skipped), or null. */
const APACHE_MISSING = apacheMissing();

beforeAll(async () => {
  work = tempDir('vidfeeds-serving-');
  const fixture = createDemoDb({ users: 24, seed: 5 });
  const odd = insertUser(fixture.db, { username: ODD_USER });
  insertVideo(fixture.db, odd.id, { public_id: ODD_VIDEO, title: 'Odd <one> & "two"' });
  // A history beyond the feeds: archive pages of uploads and of groups, under the odd name. A
  // page is numbered by the id of its newest row, and ids run up to 2^53 - 1 (docs/database.md):
  // the uploads' ids are past 10^10 (the pages 10000000206, 10000000217 and 10000000280, 11
  // digits), the groups' near 2^53 (the pages 9007199254740946, 9007199254740966 and
  // 9007199254740970, 16 digits).
  for (let i = 0; i < 150; i++) insertVideo(fixture.db, odd.id, { id: 10_000_000_150 + i, public_id: `odd-history-${i}`, created_at: T0 - 1000 + i });
  for (let g = 0; g < 125; g++) {
    insertRow(fixture.db, 'groups', { id: 9_007_199_254_740_866 + g, slug: `odd-group-${g}`, title: `Odd group ${g}`, owner_id: odd.id, created_at: T0 + g, updated_at: T0 + g });
    insertRow(fixture.db, 'group_members', { group_id: 9_007_199_254_740_866 + g, user_id: odd.id, joined_at: T0 });
  }
  fixture.db.close();
  const dbFile = join(work.dir, 'site.sqlite');
  const { copyFileSync } = await import('node:fs');
  copyFileSync(fixture.file, dbFile);
  fixture.cleanup();

  // A real build into a folder, as `vidfeeds build` does it.
  root = join(work.dir, 'out');
  // With the head snippet files, which no server may serve.
  const config = testConfig({ baseUrl: 'http://127.0.0.1:8080', videoHead: { file: true } });
  const site = createSiteContext(config, FORMATS, new Date(Date.UTC(2026, 0, 1)));
  const writer = new DirectoryWriter(root);
  const { report } = buildInMemory(dbFile, { config, writer });
  writer.close();
  expect(report.failed).toEqual([]);
  db = new Database(dbFile, { readonly: true });
  // What must never be served, planted in the tree.
  archives = (['rss', 'atom'] as const).flatMap((feed) => readdirSync(join(root, ODD_USER, feed, 'archive')).map((page) => ({ user: ODD_USER, feed, page: Number(page) })));
  expect(archives.map((a) => `${a.feed} ${a.page}`).sort()).toEqual(
    ['atom 9007199254740946', 'atom 9007199254740966', 'atom 9007199254740970', 'rss 10000000206', 'rss 10000000217', 'rss 10000000280'],
  );
  writeFileSync(join(root, '.secret'), 'secret');
  writeFileSync(join(root, 'alice', '.secret'), 'secret');
  // The build records every build leaves (src/pipeline/build-record.ts), for a whole site and for a part.
  writeFileSync(join(root, buildRecordName(undefined)), 'secret');
  writeFileSync(join(root, buildRecordName({ index: 2, count: 8 })), 'secret');
  mkdirSync(join(root, '.vidfeeds-staging'), { recursive: true });
  writeFileSync(join(root, '.vidfeeds-staging', 'x'), 'partial');

  videos = db
    .prepare<[], { public_id: string }>(
      `SELECT v.public_id FROM videos v JOIN users u ON u.id = v.user_id
       WHERE v.visibility = 'public' AND u.state = 'active' AND u.username IN ('alice', 'mallory', 'zoë') ORDER BY v.public_id LIMIT 4`,
    )
    .all()
    .map((r) => r.public_id);
  videos.push(ODD_VIDEO);

  serveCore = new SiteServer({ root, site, routes: routesOf(FORMATS), db, openForWriting: () => new Database(dbFile) });
  serve = await listen(serveCore, { host: '127.0.0.1', port: 0 });

  port.root = await freePort();
  port.base = await freePort();
  port.options = await freePort();
  const videoFiles = join(work.dir, 'videos');
  mkdirSync(videoFiles);
  writeFileSync(join(videoFiles, 'clip.flv'), 'FLV');
  const generate = (args: string[]) => {
    const result = cli(['hosting', 'nginx', '--root', root, ...args]);
    expect(result.code, result.stderr).toBe(0);
    return result.stdout;
  };
  const servers = [
    generate(['--listen', `127.0.0.1:${port.root}`, '--base-url', 'http://127.0.0.1:8080', '--upstream', `127.0.0.1:${serve.port}`]),
    generate(['--listen', `127.0.0.1:${port.base}`, '--base-url', `http://127.0.0.1:8080${encodeURI(BASE_PATH)}`, '--name', 'based']),
    generate([
      '--listen', `127.0.0.1:${port.options}`, '--base-url', 'http://localhost:8080', '--name', 'opts',
      '--automated-rate', '1r/m', '--automated-burst', '1',
      '--video-location', '/files/', '--video-root', videoFiles, '--refuse-hotlinks', '--allow-referer', 'partner.example',
    ]),
  ];
  const prefix = join(work.dir, 'nginx');
  mkdirSync(prefix);
  nginx = await startNginx(prefix, nginxMainConfig(prefix, servers.join('\n')), [port.root, port.base, port.options]);

  if (APACHE_MISSING === null) {
    // A tree holds one .htaccess, so the base path gets a copy of the tree with its own.
    const based = join(work.dir, 'based');
    cpSync(root, based, { recursive: true });
    const htaccess = (args: string[]) => {
      const result = cli(['hosting', 'apache', ...args]);
      expect(result.code, result.stderr).toBe(0);
      return result.stdout;
    };
    writeFileSync(join(root, '.htaccess'), htaccess(['--base-url', 'http://127.0.0.1:8080', '--upstream', `127.0.0.1:${serve.port}`]));
    writeFileSync(join(based, '.htaccess'), htaccess(['--base-url', `http://127.0.0.1:8080${encodeURI(BASE_PATH)}`]));
    const elsewhere = join(work.dir, 'elsewhere');
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, 'index.html'), '<!doctype html><title>another site</title>');
    port.apacheRoot = await freePort();
    port.apacheBase = await freePort();
    const apachePrefix = join(work.dir, 'apache');
    mkdirSync(apachePrefix);
    const sites = [
      { port: port.apacheRoot, documentRoot: root },
      { port: port.apacheBase, documentRoot: elsewhere, aliases: { [BASE_PATH]: based } },
    ];
    const config = apacheConfig(apachePrefix, sites, [root, based], documentedApache());
    apache = await startApache(apachePrefix, config, [port.apacheRoot, port.apacheBase], [work.dir]);
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

describe('the URL table', () => {
  it('is the format table: every row has its format, path and content type', () => {
    const rows = FORMATS.filter((f) => f.served !== false).map((f) =>
      f.scope === 'site'
        ? { url: `/${f.file}`, file: f.file, type: f.mediaType }
        : f.paged !== undefined
          ? { url: `/<${f.scope}>/${f.dir}/${f.paged}/<N>/${f.urlName}`, file: `<${f.scope}>/${f.dir}/${f.paged}/<N>/${f.file}`, type: f.mediaType }
          : { url: `/<${f.scope}>/${f.dir}/${f.urlName}`, file: `<${f.scope}>/${f.dir}/${f.file}`, type: f.mediaType },
    );
    expect(new Set(rows.map((r) => JSON.stringify(r)))).toEqual(new Set(URL_TABLE.map(({ url, file, type }) => JSON.stringify({ url, file, type }))));
  });
});

interface Target {
  port: number;
  base: string;
  /** Refused paths a server answers with another status than 404, and why (docs/hosting.md). */
  refusedOtherwise?: Record<string, number>;
}

/** Apache normalises the path before reading any configuration, and refuses one climbing above the root. */
const APACHE_ABOVE_ROOT = { '/%2e%2e/alice/rss/': 400, '/.%2e/alice/rss/': 400 };

const SERVERS: Array<[string, () => Target]> = [
  ['nginx at the root', () => ({ port: port.root, base: '' })],
  ['nginx under a base path', () => ({ port: port.base, base: encodeURI(BASE_PATH) })],
  ['vidfeeds serve', () => ({ port: serve.port, base: '' })],
];
if (APACHE_MISSING === null) {
  SERVERS.push(
    ['Apache at the root', () => ({ port: port.apacheRoot, base: '', refusedOtherwise: APACHE_ABOVE_ROOT })],
    ['Apache under a base path', () => ({ port: port.apacheBase, base: encodeURI(BASE_PATH) })],
  );
}

if (APACHE_MISSING !== null) {
  describe('Apache 2.4', () => {
    it.skip(`is not tested here: ${APACHE_MISSING}`, () => {});
  });
}

describe.each(SERVERS)('%s', (where, target) => {
  it('answers every URL form for several users and videos: 200, the exact Content-Type, the file', async () => {
    const { port: p, base } = target();
    const urls = servedUrls(USERS, videos, archives);
    expect(urls.length).toBeGreaterThan(150);
    for (const url of urls) expectServed(await http(p, base + url.target), url, root, where);
    expectBodiesParse(urls, root);
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    const { port: p, base } = target();
    const get = await http(p, `${base}/alice/rss/`);
    const head = await http(p, `${base}/alice/rss/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(head.headers['content-type']).toBe(get.headers['content-type']);
    expect(head.headers['content-length']).toBe(String(get.body.length));
  });

  it('sends an ETag and answers If-None-Match with 304', async () => {
    const { port: p, base } = target();
    const first = await http(p, `${base}/robots.txt`);
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^(W\/)?"[^"]+"$/);
    const again = await http(p, `${base}/robots.txt`, { headers: { 'If-None-Match': etag } });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    // The ETag of a compressed answer is another one, and must be recognised too.
    const gzip = { 'Accept-Encoding': 'gzip' };
    const zipped = await http(p, `${base}/alice/rss/`, { headers: gzip });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    const zippedAgain = await http(p, `${base}/alice/rss/`, { headers: { ...gzip, 'If-None-Match': zipped.headers.etag as string } });
    expect(zippedAgain.status).toBe(304);
  });

  it('compresses when asked, with Vary, and the bytes inflate to the file', async () => {
    const { port: p, base } = target();
    const answer = await http(p, `${base}/alice/rss/`, { headers: { 'Accept-Encoding': 'gzip' } });
    expect(answer.headers['content-encoding']).toBe('gzip');
    expect(String(answer.headers.vary)).toMatch(/Accept-Encoding/i);
    expect(answer.text).toBe((await http(p, `${base}/alice/rss/`)).body.toString('utf8'));
    const refused = await http(p, `${base}/alice/rss/`, { headers: { 'Accept-Encoding': 'gzip;q=0' } });
    expect(refused.headers['content-encoding']).toBeUndefined();
  });

  it('answers 404 to hidden files, file names, tricks and what is absent', async () => {
    const { port: p, base, refusedOtherwise = {} } = target();
    for (const path of REFUSED_PATHS) {
      const answer = await http(p, base + path);
      expect(answer.status, `${where} ${base}${path}`).toBe(refusedOtherwise[path] ?? 404);
      expect(answer.text).not.toContain('secret');
    }
    const privateVideo = db.prepare<[], { public_id: string }>(`SELECT public_id FROM videos WHERE visibility = 'private' LIMIT 1`).get()!;
    expect((await http(p, `${base}/${privateVideo.public_id}/oembed/`)).status).toBe(404);
  });

  it('lets any site frame the embed page, and only the embed page', async () => {
    const { port: p, base } = target();
    for (const video of videos) {
      for (const path of [`/${encodeURIComponent(video)}/embed/`, `/${encodeURIComponent(video)}/embed`]) {
        for (const headers of [{}, { 'Accept-Encoding': 'gzip' }] as Array<Record<string, string>>) {
          const answer = await http(p, base + path, { headers });
          expect(answer.status, `${where} ${path}`).toBe(200);
          expect(answer.headers['content-security-policy'], `${where} ${path}`).toBe('frame-ancestors *');
          expect(answer.headers['x-frame-options'], `${where} ${path}`).toBeUndefined();
        }
      }
    }
    // The head snippet beside it is in the tree, and is no document: 404.
    expect(existsSync(join(root, videos[0]!, 'embed', 'head.html'))).toBe(true);
    expect((await http(p, `${base}/${encodeURIComponent(videos[0]!)}/embed/head.html`)).status).toBe(404);
    // hCard's page has the same file name (index.html): it keeps the browser's default.
    const hcard = await http(p, `${base}/alice/hcard/`);
    expect(hcard.status).toBe(200);
    expect(hcard.headers['content-security-policy']).toBeUndefined();
  });

  it('answers 501 to an oEmbed format it does not have', async () => {
    const { port: p, base } = target();
    for (const format of ['html', 'yaml', 'JSON']) {
      expect((await http(p, `${base}/${videos[0]}/oembed/?format=${format}`)).status, format).toBe(501);
    }
  });
});

const PROXIES: Array<[string, () => { root: number; base: number }]> = [['nginx', () => ({ root: port.root, base: port.base })]];
if (APACHE_MISSING === null) PROXIES.push(['Apache', () => ({ root: port.apacheRoot, base: port.apacheBase })]);

describe.each(PROXIES)('%s with vidfeeds serve as its upstream', (server, ports) => {
  it('hands parametrised oEmbed requests to vidfeeds serve', async () => {
    const { root: proxy } = ports();
    const video = videos[0]!;
    const answer = await http(proxy, `/${video}/oembed/?maxwidth=200&url=${encodeURIComponent(`http://127.0.0.1:8080/${video}/embed/`)}`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    const fitted = JSON.parse(answer.text) as { width: number; height: number; html: string };
    expect(fitted.width).toBeLessThanOrEqual(200);
    // The iframe of the embed page takes the fitted size.
    expect(fitted.html).toContain(`src="http://127.0.0.1:8080/${video}/embed/" width="${fitted.width}" height="${fitted.height}"`);
    const jsonp = await http(proxy, `/${video}/oembed/?callback=cb`);
    expect(jsonp.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(jsonp.headers['x-content-type-options']).toBe('nosniff');
    expect((await http(proxy, `/${video}/oembed/?callback=alert(1)`)).status).toBe(400);
    expect((await http(proxy, `/nothing-here/oembed/?maxwidth=100`)).status).toBe(404);
  });

  it('hands ?recommendations=N and the POST to vidfeeds serve, and keeps its body limit', async () => {
    const { root: proxy } = ports();
    const many = await http(proxy, '/alice/openrecommender/?recommendations=2');
    expect(many.status, many.text).toBe(200);
    expect(many.text.match(/<recommendation[ >]/g)?.length).toBe(2);
    // One link per proxy: serve refuses the same link to the same user twice (409).
    const form = new URLSearchParams({ title: `Through ${server}`, image: 'https://img.example/1.jpg', link: `https://vid.example/${server}` }).toString();
    const post = await http(proxy, '/bob/openrecommender/', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    expect(post.status, post.text).toBe(202);
    const huge = await http(proxy, '/bob/openrecommender/', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `title=${'x'.repeat(64 * 1024)}`,
    });
    expect(huge.status).toBe(413);
  });

  it('serves the same files itself without an upstream, and refuses the POST', async () => {
    const { base } = ports();
    const post = await http(base, `${encodeURI(BASE_PATH)}/bob/openrecommender/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'title=x',
    });
    expect(post.status).toBe(405);
    // A URL off the table is absent whatever the method.
    expect((await http(base, `${encodeURI(BASE_PATH)}/bob/nothing/`, { method: 'POST', body: 'title=x' })).status).toBe(404);
    // Outside the base path nothing is served.
    expect((await http(base, '/alice/rss/')).status).toBe(404);
  });
});

describe.skipIf(APACHE_MISSING !== null)('Apache set up as docs/hosting.md says', () => {
  it('is given the AllowOverride line the .htaccess names, and modules Apache has', () => {
    const documented = documentedApache();
    expect(documented.allowOverride).toBe(APACHE_ALLOW_OVERRIDE);
    expect(cli(['hosting', 'apache']).stdout).toContain(APACHE_ALLOW_OVERRIDE);
    expect(documented.modules).toEqual(expect.arrayContaining(['rewrite', 'headers', 'proxy_http']));
  });

  it('never serves the .htaccess itself (403 from Debian\'s own rule for .ht* names)', async () => {
    const requests: Array<[number, string]> = [[port.apacheRoot, '/.htaccess'], [port.apacheBase, `${encodeURI(BASE_PATH)}/.htaccess`]];
    for (const [p, target] of requests) {
      const answer = await http(p, target);
      expect(answer.status, target).toBe(403);
      expect(answer.text).not.toContain('RewriteRule');
    }
  });

  it('logs no configuration error of the .htaccess while serving all of this', () => {
    const log = apache!.errorLog();
    expect(log).not.toMatch(/not allowed here|Invalid command|\[(\w+:)?(crit|alert|emerg)\]/);
    // Errors Apache logs are the answers expected above: 400 above the root, 403 for .htaccess.
    const errors = log.split('\n').filter((line) => /\[(\w+:)?error\]/.test(line) && !/AH10244: invalid URI path|AH01630: client denied by server configuration: .*\.htaccess$/.test(line));
    expect(errors).toEqual([]);
  });
});

describe('nginx operator options', () => {
  it('rate-limits automated clients by User-Agent and leaves browsers alone', async () => {
    const bot = [];
    for (let i = 0; i < 4; i++) bot.push((await http(port.options, '/robots.txt', { headers: { 'User-Agent': 'curl/8.0' } })).status);
    expect(bot.slice(0, 2)).toEqual([200, 200]);
    expect(bot.slice(2)).toEqual([429, 429]);
    for (let i = 0; i < 4; i++) {
      expect((await http(port.options, '/robots.txt', { headers: { 'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0' } })).status).toBe(200);
    }
  });

  it('refuses hot-links to video files from other sites', async () => {
    const browser = { 'User-Agent': 'Mozilla/5.0 Firefox/140.0' };
    const own = await http(port.options, '/files/clip.flv', { headers: { ...browser, Referer: 'http://localhost/alice/' } });
    expect(own.status).toBe(200);
    expect(own.headers['content-type']).toBe('video/x-flv');
    expect((await http(port.options, '/files/clip.flv', { headers: browser })).status).toBe(200);
    expect((await http(port.options, '/files/clip.flv', { headers: { ...browser, Referer: 'https://partner.example/page' } })).status).toBe(200);
    expect((await http(port.options, '/files/clip.flv', { headers: { ...browser, Referer: 'https://thief.example/page' } })).status).toBe(403);
  });

  it('logs nothing worse than a warning while serving all of this, but the refused large body', () => {
    const bad = nginx.errorLog().split('\n').filter((line) => /\[(error|crit|alert|emerg)\]/.test(line) && !/too large (chunked )?body/.test(line));
    expect(bad).toEqual([]);
  });
});
