import Database from 'better-sqlite3';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DirectoryWriter } from '../../src/pipeline/write/output-writer.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { FORMATS } from '../../src/formats/registry.js';
import { routesOf } from '../../src/hosting/routes.js';
import { listen, type RunningServer } from '../../src/serve/http-server.js';
import { SiteServer } from '../../src/serve/site-server.js';
import { cli } from '../helpers/cli.js';
import { freePort, http } from '../helpers/http.js';
import { nginxMainConfig, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { missingPrograms } from '../helpers/programs.js';
import { buildInMemory, createDemoDb, testConfig } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';
import { feedparser } from '../helpers/validators.js';

/**
 * The demo site as readers, crawlers and oEmbed consumers meet it: built into a folder, served by
 * Debian's nginx with the configuration `vidfeeds hosting nginx --upstream` prints and
 * `vidfeeds serve` behind it, and read by the programs people use: newsboat (every Atom entry of
 * every feed, OPML import), Perl's XML::Feed (every RSS item's enclosure), roqet (SPARQL on FOAF)
 * and ruby-oembed (discovery from a video page carrying the links `vidfeeds oembed-links`
 * prints, then the document, with maxwidth). The site's own video pages are stood in for by a
 * small server, as `pages.video` names them.
 */

const skip = missingPrograms('the real clients test', {
  nginx: 'nginx-light',
  newsboat: 'newsboat',
  perl: 'libxml-feed-perl',
  ruby: 'ruby-oembed',
  roqet: 'rasqal-utils',
  sqlite3: 'sqlite3',
});

let work: { dir: string; cleanup: () => void };
let root: string;
let nginx: RunningNginx;
let serve: RunningServer;
let serveCore: SiteServer;
let pages: Server;
let db: Database.Database;
let base: string;
let users: string[];
let videos: string[];
const port = { nginx: 0, pages: 0 };

beforeAll(async () => {
  if (skip !== null) return;
  work = tempDir('vidfeeds-clients-');
  const fixture = createDemoDb({ users: 30, seed: 11 });
  fixture.db.close();
  const dbFile = join(work.dir, 'site.sqlite');
  copyFileSync(fixture.file, dbFile);
  fixture.cleanup();
  port.nginx = await freePort();
  port.pages = await freePort();
  base = `http://127.0.0.1:${port.nginx}`;
  const config = testConfig({ baseUrl: base, pages: { ...testConfig().pages, video: `http://127.0.0.1:${port.pages}/watch/{video}/` } });
  const configFile = join(work.dir, 'vidfeeds.config.json');
  writeFileSync(configFile, JSON.stringify(config));

  root = join(work.dir, 'out');
  const site = createSiteContext(config, FORMATS);
  const writer = new DirectoryWriter(root);
  const { report } = buildInMemory(dbFile, { config, writer });
  writer.close();
  expect(report.failed).toEqual([]);
  db = new Database(dbFile, { readonly: true });
  users = readdirUsers(root, 'atom');
  videos = readdirUsers(root, 'oembed');

  serveCore = new SiteServer({ root, site, routes: routesOf(FORMATS), db, openForWriting: () => new Database(dbFile) });
  serve = await listen(serveCore, { host: '127.0.0.1', port: 0 });
  const generated = cli(['hosting', 'nginx', '--root', root, '--listen', `127.0.0.1:${port.nginx}`, '--base-url', base, '--upstream', `127.0.0.1:${serve.port}`]);
  expect(generated.code, generated.stderr).toBe(0);
  const prefix = join(work.dir, 'nginx');
  mkdirSync(prefix);
  nginx = await startNginx(prefix, nginxMainConfig(prefix, generated.stdout), [port.nginx]);

  // The site's own video pages: each carries the discovery links `vidfeeds oembed-links` prints for
  // it (two lines a video, in the order given).
  const printed = cli(['oembed-links', '--config', configFile, ...videos]);
  expect(printed.code, printed.stderr).toBe(0);
  const lines = printed.stdout.split('\n').filter(Boolean);
  expect(lines).toHaveLength(videos.length * 2);
  const discovery = new Map(videos.map((id, i) => [id, `${lines[2 * i]}\n${lines[2 * i + 1]}\n`]));
  pages = createServer((req, res) => {
    const match = /^\/watch\/([^/]+)\/$/.exec(req.url ?? '');
    const id = match === null ? null : decodeURIComponent(match[1]!);
    if (id === null || !videos.includes(id)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(`<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>A video</title>\n${discovery.get(id)}</head><body><p>The video page.</p></body></html>\n`);
  });
  await new Promise<void>((ready) => pages.listen(port.pages, '127.0.0.1', ready));
}, 120_000);

afterAll(async () => {
  await nginx?.stop();
  await serve?.close();
  await new Promise((done) => (pages === undefined ? done(undefined) : pages.close(done)));
  serveCore?.close();
  db?.close();
  work?.cleanup();
});

/** The keys (users or videos) that have a folder of this format in the tree. */
function readdirUsers(tree: string, dir: string): string[] {
  const out = spawnSync('find', [tree, '-mindepth', '2', '-maxdepth', '2', '-type', 'd', '-name', dir], { encoding: 'utf8' });
  return out.stdout.split('\n').filter(Boolean).map((path) => path.slice(tree.length + 1, -(dir.length + 1))).sort();
}

const url = (key: string, dir: string) => `${base}/${encodeURIComponent(key)}/${dir}/`;

function run(command: string, args: string[], options: { cwd?: string; input?: string; env?: Record<string, string>; okCodes?: number[] } = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024, ...options, env: { ...process.env, LANG: 'C.UTF-8', ...options.env } });
  if (!(options.okCodes ?? [0]).includes(result.status ?? -1)) throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr}${result.stdout}`);
  return result.stdout;
}

/**
 * The same, without blocking this process: `vidfeeds serve` and the stand-in video pages run in
 * it, and a client that reaches them (through nginx) must find them answering.
 */
function runAsync(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, LANG: 'C.UTF-8' } });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${command} exited ${code}: ${err}${out}`));
    });
  });
}

describe.skipIf(skip !== null)('real clients on the served demo', () => {
  it('newsboat keeps every Atom entry of every feed, across feeds', () => {
    const dir = join(work.dir, 'newsboat');
    mkdirSync(dir);
    const feeds = users.map((u) => url(u, 'atom'));
    writeFileSync(join(dir, 'urls'), `${feeds.join('\n')}\n`);
    writeFileSync(join(dir, 'config'), 'reload-threads 4\nshow-read-feeds yes\n');
    run('newsboat', ['-x', 'reload', '-u', join(dir, 'urls'), '-c', join(dir, 'cache.db'), '-C', join(dir, 'config')], { env: { HOME: dir } });
    const rows = run('sqlite3', [join(dir, 'cache.db'), 'SELECT feedurl, count(*) FROM rss_item GROUP BY feedurl']);
    const kept = new Map(rows.split('\n').filter(Boolean).map((line) => {
      const at = line.lastIndexOf('|');
      return [line.slice(0, at), Number(line.slice(at + 1))] as const;
    }));
    const parsed = feedparser(Object.fromEntries(users.map((u) => [u, readFileSync(join(root, u, 'atom', 'index.atom'), 'utf8')])));
    let entries = 0;
    for (const user of users) {
      const expected = parsed[user]!.entries.length;
      entries += expected;
      expect(kept.get(url(user, 'atom')) ?? 0, user).toBe(expected);
    }
    // Groups are shared by members: the same group is in several feeds, and kept in each.
    expect(entries).toBeGreaterThan(40);
  });

  it('newsboat imports a user’s OPML reading list: every feed of it', () => {
    const dir = join(work.dir, 'newsboat-opml');
    mkdirSync(dir);
    const withLists = users.filter((u) => readFileSync(join(root, u, 'opml', 'index.opml'), 'utf8').includes('xmlUrl='));
    expect(withLists.length).toBeGreaterThan(3);
    for (const user of withLists) {
      const opml = readFileSync(join(root, user, 'opml', 'index.opml'), 'utf8');
      const file = join(dir, `${users.indexOf(user)}.opml`);
      writeFileSync(file, opml);
      const urls = join(dir, `${users.indexOf(user)}.urls`);
      writeFileSync(urls, '');
      run('newsboat', ['-i', file, '-u', urls, '-c', join(dir, 'cache.db'), '-C', '/dev/null'], { env: { HOME: dir } });
      const imported = readFileSync(urls, 'utf8').split('\n').filter(Boolean).map((line) => line.split(/\s+/)[0]);
      const listed = [...opml.matchAll(/xmlUrl="([^"]*)"/g)].map((m) => m[1]!.replaceAll('&amp;', '&'));
      expect(new Set(imported), user).toEqual(new Set(listed));
    }
  });

  it('Perl XML::Feed sees an enclosure on every RSS item, length 0 where the size is unknown', () => {
    const script = `
use strict; use warnings; use XML::Feed; use URI; use JSON::PP;
my %out;
for my $url (@ARGV) {
  my $feed = XML::Feed->parse(URI->new($url)) or die XML::Feed->errstr;
  $out{$url} = [ map { my $e = $_->enclosure; $e ? [$e->url, $e->length, $e->type] : undef } $feed->entries ];
}
print JSON::PP->new->canonical->encode(\\%out);
`;
    const feeds = users.map((u) => url(u, 'rss'));
    const seen = JSON.parse(run('perl', ['-e', script, ...feeds])) as Record<string, Array<[string, string, string] | null>>;
    let items = 0;
    let unknownSize = 0;
    for (const user of users) {
      const expected = feedparser({ rss: readFileSync(join(root, user, 'rss', 'index.rss'), 'utf8') }).rss!.entries;
      const enclosures = seen[url(user, 'rss')]!;
      expect(enclosures.length, user).toBe(expected.length);
      for (const enclosure of enclosures) {
        expect(enclosure, user).not.toBeNull();
        expect(enclosure![0]).toMatch(/^https?:\/\//);
        if (enclosure![1] === '0') unknownSize++;
        items++;
      }
    }
    expect(items).toBeGreaterThan(40);
    expect(unknownSize).toBeGreaterThan(0);
  });

  it('roqet finds every shown given and family name with FOAF’s current terms', () => {
    const query = `PREFIX foaf: <http://xmlns.com/foaf/0.1/>
SELECT ?given ?old ?family ?oldFamily WHERE {
  ?doc foaf:primaryTopic ?person .
  OPTIONAL { ?person foaf:givenName ?given } OPTIONAL { ?person foaf:givenname ?old }
  OPTIONAL { ?person foaf:familyName ?family } OPTIONAL { ?person foaf:family_name ?oldFamily }
}`;
    let named = 0;
    for (const user of users) {
      // roqet (rasqal 0.9.33) exits 2 after any query with -D, results and all; its output is
      // checked instead. Tab-separated results: a header of the variables, then one row of RDF terms ("" when unbound).
      const [header, ...rows] = run('roqet', ['-q', '-r', 'tsv', '-e', query, '-D', url(user, 'foaf')], { okCodes: [0, 2] }).split('\n').filter(Boolean);
      expect(header).toBe('?given\t?old\t?family\t?oldFamily');
      expect(rows, user).toHaveLength(1);
      const [given, old, family, oldFamily] = rows[0]!.split('\t');
      expect(given, user).toBe(old);
      expect(family, user).toBe(oldFamily);
      if (given !== '' || family !== '') named++;
    }
    expect(named).toBeGreaterThan(3);
  });

  it('ruby-oembed discovers the endpoint from each video page, then reads the document, within maxwidth', async () => {
    const script = `
require 'oembed'; require 'json'
out = {}
ARGV.each do |page|
  full = OEmbed::ProviderDiscovery.get(page)
  small = OEmbed::ProviderDiscovery.get(page, maxwidth: 200)
  out[page] = { 'title' => full.title, 'html' => full.html, 'width' => small.width.to_i, 'height' => small.height.to_i,
                'small' => small.html, 'web_page' => full.fields['web_page'] }
end
puts JSON.generate(out)
`;
    const pageOf = (id: string) => `http://127.0.0.1:${port.pages}/watch/${encodeURIComponent(id)}/`;
    const sample = videos.slice(0, 25);
    const read = JSON.parse(await runAsync('ruby', ['-e', script, ...sample.map(pageOf)])) as Record<string, { title: string; html: string; width: number; height: number; small: string; web_page: string }>;
    for (const id of sample) {
      const document = JSON.parse(readFileSync(join(root, id, 'oembed', 'index.json'), 'utf8')) as { title: string; html: string; web_page: string };
      const got = read[pageOf(id)]!;
      expect(got.title, id).toBe(document.title);
      expect(got.html, id).toBe(document.html);
      expect(got.web_page, id).toBe(pageOf(id));
      expect(got.width, id).toBeLessThanOrEqual(200);
      expect(got.width, id).toBeGreaterThan(0);
      expect(got.small, id).toContain(`width="${got.width}"`);
    }
  });
});

describe.skipIf(skip !== null)('nginx and vidfeeds serve, for the same conditional requests', () => {
  it('give the same status, and Last-Modified both', async () => {
    const target = `/${encodeURIComponent(users[0]!)}/rss/`;
    const fromNginx = await http(port.nginx, target);
    const fromServe = await http(serve.port, target);
    const cases = (r: typeof fromNginx) => {
      const lastModified = String(r.headers['last-modified']);
      const etag = String(r.headers.etag);
      const earlier = new Date(Date.parse(lastModified) - 60_000).toUTCString();
      const later = new Date(Date.parse(lastModified) + 60_000).toUTCString();
      const list: Array<Record<string, string>> = [
        {},
        { 'If-Modified-Since': lastModified },
        { 'If-Modified-Since': earlier },
        { 'If-Modified-Since': later },
        { 'If-Modified-Since': 'garbage' },
        { 'If-None-Match': etag },
        { 'If-None-Match': `W/${etag}` },
        { 'If-None-Match': '"nope"' },
        { 'If-None-Match': '*' },
        { 'If-None-Match': etag, 'If-Modified-Since': lastModified },
        { 'If-None-Match': etag, 'If-Modified-Since': earlier },
        { 'If-None-Match': '"nope"', 'If-Modified-Since': lastModified },
        { 'If-Unmodified-Since': lastModified },
        { 'If-Unmodified-Since': earlier },
        { 'If-Match': etag },
        { 'If-Match': '"nope"' },
        { 'If-Match': '*' },
      ];
      return list;
    };
    for (const r of [fromNginx, fromServe]) expect(r.headers['last-modified']).toMatch(/GMT$/);
    const nginxCases = cases(fromNginx);
    const serveCases = cases(fromServe);
    for (const [i, headers] of nginxCases.entries()) {
      const a = await http(port.nginx, target, { headers });
      const b = await http(serve.port, target, { headers: serveCases[i]! });
      expect(b.status, JSON.stringify(headers)).toBe(a.status);
      for (const r of [a, b]) expect(r.headers['x-content-type-options'], JSON.stringify(headers)).toBe('nosniff');
    }
  });

  it('send one Vary through nginx from serve, and nosniff on every error', async () => {
    const video = videos[0]!;
    for (const query of ['?maxwidth=100', '?maxwidth=100&format=xml']) {
      const r = await http(port.nginx, `/${encodeURIComponent(video)}/oembed/${query}`, { headers: { 'Accept-Encoding': 'gzip' } });
      expect(r.status).toBe(200);
      expect(r.headers.vary, query).toBe('Accept-Encoding');
      const plain = await http(port.nginx, `/${encodeURIComponent(video)}/oembed/${query}`);
      expect(plain.headers.vary, query).toBe('Accept-Encoding');
    }
    const errors = [
      `/${encodeURIComponent(video)}/oembed/?url=${encodeURIComponent('<script>alert(1)</script>')}`,
      `/${encodeURIComponent(video)}/oembed/?format=yaml`,
      `/${encodeURIComponent(video)}/oembed/?maxwidth=-1`,
      '/nothing-here/',
      '/no-such-user/rss/',
      `/${encodeURIComponent(users[0]!)}/openrecommender/?recommendations=0`,
    ];
    for (const target of errors) {
      const r = await http(port.nginx, target);
      expect(r.status, target).toBeGreaterThanOrEqual(400);
      expect(r.headers['x-content-type-options'], target).toBe('nosniff');
    }
    // The page URL without its final slash names the video too, through nginx.
    const page = `http://127.0.0.1:${port.pages}/watch/${encodeURIComponent(video)}`;
    expect((await http(port.nginx, `/${encodeURIComponent(video)}/oembed/?url=${encodeURIComponent(page)}`)).status).toBe(200);
  });
});
