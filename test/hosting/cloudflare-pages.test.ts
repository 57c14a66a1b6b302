import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { http, type HttpResult } from '../helpers/http.js';
import { expectServed, servedUrls, type ServedUrl } from '../helpers/served-urls.js';
import { createDemoDb } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';
import { findWrangler, startPagesDev, type RunningPages } from '../helpers/wrangler.js';

/**
 * The `_headers` and `_redirects` of `vidfeeds hosting headers|redirects --for cloudflare`, served
 * by Cloudflare's own Pages server (wrangler pages dev): every URL form of the table answers with
 * its file, its exact Content-Type, its Cache-Control and nosniff, but for the two differences
 * docs/hosting.md names (a bare hCard URL is redirected to the one with its final slash; a query
 * string is not matched). The feeds carry their WebSub Link, naming themselves.
 */

const wrangler = findWrangler();
const BASE = 'https://videos.example.org';
const HUBS = ['https://hub.example.net/', 'https://push.example.org/hub?x=1'];
const CACHE = { feeds: 'public, max-age=901', profiles: 'public, max-age=86401', site: 'public, max-age=3601' };

let work: { dir: string; cleanup: () => void };
let site: ReturnType<typeof createDemoDb>;
let pages: RunningPages | undefined;
let port: number;
let root: string;
let users: string[];
let videos: string[];

beforeAll(async () => {
  if (typeof wrangler === 'string') return;
  work = tempDir('vidfeeds-cloudflare-');
  site = createDemoDb({ users: 12, seed: 3 });
  root = join(work.dir, 'out');
  const config = join(work.dir, 'vidfeeds.config.json');
  writeFileSync(config, JSON.stringify({ baseUrl: BASE, websub: { hubs: HUBS }, cacheControl: CACHE }));
  const built = cli(['build', '--db', site.file, '--out', root, '--config', config, '--no-notify']);
  expect(built.code, built.stderr).toBe(0);
  for (const [command, file] of [['headers', '_headers'], ['redirects', '_redirects']] as const) {
    const printed = cli(['hosting', command, '--for', 'cloudflare', '--config', config]);
    expect(printed.code, printed.stderr).toBe(0);
    writeFileSync(join(root, file), printed.stdout);
  }
  const folders = readdirSync(root).filter((name) => !name.startsWith('.') && !name.startsWith('_'));
  users = folders.filter((name) => existsSync(join(root, name, 'rss', 'index.rss')));
  videos = folders.filter((name) => existsSync(join(root, name, 'oembed', 'index.json')));
  pages = await startPagesDev(wrangler, root, join(work.dir, 'wrangler'));
  port = pages.port;
}, 120_000);

afterAll(async () => {
  await pages?.stop();
  site?.cleanup();
  work?.cleanup();
});

/** The Cache-Control a URL's row must carry: its format's class, as configured. */
function cacheOf(url: ServedUrl): string {
  if (/\/(rss|atom|openrecommender|xspf|apml|opml)\/$/.test(url.file.replace(/[^/]*$/, ''))) return CACHE.feeds;
  if (!url.file.includes('/')) return CACHE.site;
  return CACHE.profiles;
}

/** An error answer, with its body and what wrangler printed last: whose refusal it is shows there. */
function expectNoError(answer: HttpResult, target: string): void {
  if (answer.status < 400) return;
  throw new Error(`${target} answered ${answer.status}: ${answer.text.slice(0, 300)}\nwrangler printed last:\n${pages!.output().slice(-3000)}`);
}

describe.skipIf(typeof wrangler === 'string')('Cloudflare Pages (wrangler pages dev)', () => {
  it('takes every rule of both files', () => {
    expect(pages!.output()).toMatch(/Parsed \d+ valid header rules/);
    expect(pages!.output()).not.toMatch(/invalid (header|redirect) rule/i);
  });

  it('answers every URL form of the table with its file, type, Cache-Control and nosniff, but for the two named differences', async () => {
    expect(users).toContain('alice');
    expect(users.some((name) => /[^\x00-\x7f]/.test(name)), 'a user with a name beyond ASCII').toBe(true);
    expect(videos.length).toBeGreaterThan(3);
    for (const url of servedUrls(users, videos)) {
      const answer = await http(port, url.target);
      expectNoError(answer, url.target);
      if (/\/(hcard|embed)$/.test(url.target)) {
        // Cloudflare Pages answers a bare URL of an HTML file with a redirect to the folder's URL.
        expect(answer.status, url.target).toBe(308);
        expect(decodeURIComponent(answer.headers.location as string), url.target).toBe(`${decodeURIComponent(url.target)}/`);
        continue;
      }
      if (url.target.endsWith('?format=xml')) {
        // No query matching on Cloudflare Pages: the oEmbed endpoint's default form answers.
        expect(answer.status, url.target).toBe(200);
        expect(answer.headers['content-type'], url.target).toBe('application/json; charset=utf-8');
        continue;
      }
      expectServed(answer, url, root, 'cloudflare');
      expect(answer.headers['cache-control'], url.target).toBe(cacheOf(url));
      expect(answer.headers['x-content-type-options'], url.target).toBe('nosniff');
      // Any site may frame the embed page; no other document carries the header.
      expect(answer.headers['content-security-policy'], url.target).toBe(/\/embed\/$/.test(url.target) ? 'frame-ancestors *' : undefined);
      expect(answer.headers['x-frame-options'], url.target).toBeUndefined();
    }
  }, 300_000);

  it("sends each feed's WebSub Link, naming its hubs and the feed itself, with or without the final slash", async () => {
    const hubs = HUBS.map((hub) => `<${hub}>; rel="hub"`).join(', ');
    const checked = users.filter((name) => name === 'alice' || /[^\x00-\x7f]/.test(name));
    for (const user of checked) {
      for (const feed of ['rss', 'atom']) {
        const path = `/${encodeURIComponent(user)}/${feed}/`;
        for (const target of [path, path.slice(0, -1)]) {
          const answer = await http(port, target);
          expectNoError(answer, target);
          expect(answer.status, target).toBe(200);
          expect(answer.headers.link, target).toBe(`${hubs}, <${BASE}${path}>; rel="self"`);
        }
      }
    }
    const foaf = await http(port, '/alice/foaf/');
    expect(foaf.status).toBe(200);
    expect(foaf.headers.link).toBeUndefined();
  });
});
