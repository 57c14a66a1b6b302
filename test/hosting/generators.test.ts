import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Format } from '../../src/formats/format.js';
import { FORMATS } from '../../src/formats/registry.js';
import { DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import { htaccess } from '../../src/hosting/apache.js';
import { cacheControlOf } from '../../src/hosting/cache-control.js';
import { nginxConfig } from '../../src/hosting/nginx.js';
import { headersFile, redirectsFile } from '../../src/hosting/pages.js';
import { routesOf } from '../../src/hosting/routes.js';
import { matchRoute, splitUrlPath } from '../../src/paths/url-scheme.js';
import { cli } from '../helpers/cli.js';
import { nginxMainConfig, nginxTest } from '../helpers/nginx.js';
import { URL_TABLE } from '../helpers/served-urls.js';
import { buildInMemory, createDemoDb } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

function work() {
  const t = tempDir('vidfeeds-hosting-');
  return t.dir;
}

describe('routes from the format table', () => {
  const routes = routesOf(FORMATS);

  it('resolve URLs to files, with and without the final slash, and nothing else', () => {
    expect(matchRoute(routes, ['alice', 'rss', ''])).toMatchObject({ kind: 'keyed', file: 'alice/rss/index.rss' });
    expect(matchRoute(routes, ['alice', 'rss'])).toMatchObject({ kind: 'keyed', file: 'alice/rss/index.rss' });
    expect(matchRoute(routes, ['sitemap-3.xml'])).toMatchObject({ kind: 'site', file: 'sitemap-3.xml' });
    expect(matchRoute(routes, ['alice', 'rss', 'index.rss'])).toBeNull();
    expect(matchRoute(routes, ['.hidden', 'rss', ''])).toBeNull();
    expect(matchRoute(routes, ['alice', 'rss', '', ''])).toBeNull();
  });

  it('split request paths, refusing tricks', () => {
    expect(splitUrlPath('/zo%C3%AB/rss/', '')).toEqual(['zoë', 'rss', '']);
    expect(splitUrlPath('/a%20b/x/rss/', '/a%20b')).toEqual(['x', 'rss', '']);
    expect(splitUrlPath('/a b/x/rss/', '/a%20b')).toEqual(['x', 'rss', '']);
    for (const bad of ['/..%2Fx/rss/', '/x%2Frss/', '/x%5Crss/', '/%00/rss/', '/./rss/', '/../rss/', '//x/rss/', '/x//rss/', '/%E0%A4%A/rss/']) {
      expect(splitUrlPath(bad, ''), bad).toBeNull();
    }
    expect(splitUrlPath('/other/x/rss/', '/base')).toBeNull();
  });

  it('follow a format added to the table, with no other change', () => {
    const extra: Format = { ...(FORMATS.find((f) => f.name === 'rss') as Format & { scope: 'user' }), name: 'extra', dir: 'extra', file: 'index.ext', mediaType: 'application/x-extra; charset=utf-8' } as Format;
    const more = routesOf([...FORMATS, extra]);
    expect(matchRoute(more, ['bob', 'extra', ''])).toMatchObject({ file: 'bob/extra/index.ext' });
    const cacheControl = (format: Format) => cacheControlOf(DEFAULT_CONFIG.cacheControl, format);
    const nginx = nginxConfig(more, { root: '/srv/out', listen: '80', serverName: 'x', basePath: '', name: 'vidfeeds', generator: 'test', cacheControl });
    expect(nginx).toContain('default_type "application/x-extra; charset=utf-8";');
    expect(htaccess(more, { basePath: '', generator: 'test', cacheControl, compress: [] })).toContain('<Files "index.ext">\n  ForceType "application/x-extra; charset=utf-8"');
    expect(headersFile(more, '', 'test', cacheControl)).toContain('/*/extra/\n  Content-Type: application/x-extra; charset=utf-8\n  Cache-Control: public, max-age=900');
    expect(redirectsFile(more, '', 'netlify', 'test')).toContain('/:key/extra/  /:key/extra/index.ext  200');
  });
});

describe('vidfeeds hosting nginx', () => {
  it('prints a configuration nginx accepts, with every option on, under a base path', () => {
    const dir = work();
    const videos = join(dir, 'videos');
    mkdirSync(videos);
    const result = cli([
      'hosting', 'nginx', '--root', dir, '--listen', '127.0.0.1:8089', '--base-url', 'https://example.org/v%C3%ADdeos/x',
      '--upstream', '127.0.0.1:8081', '--automated-rate', '30r/m', '--video-location', '/files/', '--video-root', videos,
      '--refuse-hotlinks', '--allow-referer', '*.partner.example',
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('server_name example.org;');
    expect(result.stdout).toContain('location = "/vídeos/x/robots.txt"');
    const prefix = join(dir, 'nginx');
    mkdirSync(prefix);
    const verdict = nginxTest(prefix, nginxMainConfig(prefix, result.stdout));
    expect(verdict.output).toMatch(/syntax is ok/);
    expect(verdict.ok, verdict.output).toBe(true);
  });

  it('limits recommendation POSTs per client address with --upstream, from recommendationSubmit.perClient', () => {
    const dir = work();
    writeFileSync(join(dir, 'vidfeeds.config.json'), JSON.stringify({ recommendationSubmit: { perClient: { limit: 120, windowSeconds: 60, maxPending: 5 } } }));
    const proxied = cli(['hosting', 'nginx', '--root', dir, '--upstream', '127.0.0.1:8081'], { cwd: dir });
    expect(proxied.code, proxied.stderr).toBe(0);
    expect(proxied.stdout).toContain('limit_req_zone $vidfeeds_post_client zone=vidfeeds_post:10m rate=120r/m;');
    expect(proxied.stdout).toContain('limit_req zone=vidfeeds_post burst=119 nodelay;');
    expect(proxied.stdout).toContain('add_header Retry-After 1 always;');
    expect(cli(['hosting', 'nginx', '--root', dir], { cwd: dir }).stdout).not.toContain('limit_req');
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ recommendationSubmit: { trustedProxies: ['10.0.0.0/33'] } }));
    const bad = cli(['hosting', 'nginx', '--root', dir, '--upstream', '127.0.0.1:8081', '--config', 'bad.json'], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('recommendationSubmit.trustedProxies[0] must be an IP address or a CIDR range');
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ recommendationSubmit: { perUser: { limit: 0, windowSeconds: 60, maxPending: 1 } } }));
    expect(cli(['hosting', 'nginx', '--root', dir, '--config', 'bad.json'], { cwd: dir }).stderr).toContain('recommendationSubmit.perUser.limit must be from 1');
  });

  it('names each content type of the table once per location, and no charset directive that could add a second', () => {
    const text = cli(['hosting', 'nginx', '--root', work()]).stdout;
    for (const row of URL_TABLE) expect(text, row.url).toContain(`default_type "${row.type}";`);
    expect(text).toContain('charset off;');
    expect(text).not.toMatch(/^\s*(return|rewrite)\s+30[12]/m);
  });

  it('refuses what nginx could not read, with exit code 2', () => {
    const dir = work();
    const dollar = join(dir, 'a$b');
    mkdirSync(dollar);
    const result = cli(['hosting', 'nginx', '--root', dollar]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('nginx reads as a variable');
    expect(cli(['hosting', 'nginx', '--root', dir, '--listen', 'port']).code).toBe(2);
    expect(cli(['hosting', 'nginx', '--root', dir, '--upstream', 'nohost']).code).toBe(2);
    expect(cli(['hosting', 'nginx', '--root', dir, '--refuse-hotlinks']).code).toBe(2);
    expect(cli(['hosting', 'nginx', '--root', dir, '--automated-rate', 'fast']).code).toBe(2);
  });
});

describe('vidfeeds hosting apache, headers, redirects', () => {
  it('print an .htaccess that rewrites every URL to its file, forces its type and 404s the rest', () => {
    const result = cli(['hosting', 'apache', '--base-url', 'https://example.org/videos', '--upstream', '127.0.0.1:8081']);
    expect(result.code, result.stderr).toBe(0);
    const text = result.stdout;
    expect(text).toContain('RewriteBase "/videos/"');
    expect(text).toContain('DirectorySlash Off');
    expect(text).toContain('RewriteRule "^([^/.][^/]*)/rss/?$" "$1/rss/index.rss" [B=?#%,END]');
    for (const row of URL_TABLE) expect(text, row.url).toContain(`ForceType "${row.type}"`);
    expect(text.trimEnd().endsWith('RewriteRule ^ - [R=404,L]')).toBe(true);
    expect(text).toContain('[P,L]');
  });

  it('print _headers with each URL pattern and its type, and _redirects that rewrite with 200', () => {
    const headers = cli(['hosting', 'headers']).stdout;
    for (const row of URL_TABLE) {
      const pattern = row.url.replace(/<user>|<video>/, '*').replace('<N>', ':page');
      expect(headers, row.url).toContain(`${pattern}\n  Content-Type: ${row.type}\n`);
    }
    // The embed page, and only it, may be framed by any site: both forms of its URL.
    for (const pattern of ['/*/embed/', '/*/embed']) {
      expect(headers).toContain(`${pattern}\n  Content-Type: text/html; charset=utf-8\n  Cache-Control: public, max-age=86400\n  X-Content-Type-Options: nosniff\n  Content-Security-Policy: frame-ancestors *\n`);
    }
    expect(headers.match(/Content-Security-Policy/g)).toHaveLength(2);
    expect(headers).not.toContain('head.html');
    const netlify = cli(['hosting', 'redirects', '--for', 'netlify']).stdout;
    expect(netlify).toContain('/:key/oembed/  format=xml  /:key/oembed/xml  200');
    expect(netlify).toContain('/:key/rss  /:key/rss/index.rss  200');
    const cloudflare = cli(['hosting', 'redirects', '--for', 'cloudflare']).stdout;
    expect(cloudflare).not.toContain('format=');
    for (const line of cloudflare.split('\n').filter((l) => l && !l.startsWith('#'))) expect(line.split(/\s+/)).toHaveLength(3);
    expect(cli(['hosting', 'redirects', '--for', 'vercel']).code).toBe(2);
  });

  it("give the feeds a WebSub Link in _headers only for Cloudflare Pages, the one host that can name the feed in it", () => {
    const dir = work();
    const config = join(dir, 'vidfeeds.config.json');
    writeFileSync(config, JSON.stringify({ baseUrl: 'https://example.org/videos', websub: { hubs: ['https://hub.example.net/'] } }));
    const cloudflare = cli(['hosting', 'headers', '--for', 'cloudflare', '--config', config]).stdout;
    const link = '  Link: <https://hub.example.net/>; rel="hub", <https://example.org/videos/:key/rss/>; rel="self"';
    expect(cloudflare).toContain(`/videos/:key/rss/\n  Content-Type: application/rss+xml; charset=utf-8\n  Cache-Control: public, max-age=900\n  X-Content-Type-Options: nosniff\n${link}\n`);
    expect(cloudflare).toContain(`/videos/:key/rss\n  Content-Type: application/rss+xml; charset=utf-8\n  Cache-Control: public, max-age=900\n  X-Content-Type-Options: nosniff\n${link}\n`);
    expect(cloudflare.match(/^  Link: /gm)).toHaveLength(4);
    for (const host of [['--for', 'netlify'], []]) {
      const text = cli(['hosting', 'headers', ...host, '--config', config]).stdout;
      expect(text, host.join(' ')).not.toContain('Link:');
      expect(text, host.join(' ')).toContain("WebSub Link headers are left out: only Cloudflare Pages (--for cloudflare)");
    }
    expect(cli(['hosting', 'headers', '--for', 'cloudflare']).stdout).not.toContain('Link');
    expect(cli(['hosting', 'headers', '--for', 'vercel']).code).toBe(2);
  });
});

describe('vidfeeds hosting manifest', () => {
  it('lists every file of a built tree with its content type and keys, and leaves out the rest', () => {
    const fixture = createDemoDb({ users: 12, seed: 3 });
    const dir = work();
    const { writer } = buildInMemory(fixture.file);
    for (const [path, body] of writer.files) {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), body);
    }
    writeFileSync(join(dir, '.secret'), 'x');
    writeFileSync(join(dir, 'stray.txt'), 'x');
    const result = cli(['hosting', 'manifest', '--root', dir, '--base-url', 'https://example.org/videos']);
    expect(result.code, result.stderr).toBe(0);
    const manifest = JSON.parse(result.stdout) as { basePath: string; files: Array<{ file: string; contentType: string; keys: string[]; compressed: unknown[] }> };
    expect(manifest.basePath).toBe('/videos');
    expect(manifest.files.map((f) => f.file).sort()).toEqual([...writer.files.keys()].sort());
    const rss = manifest.files.find((f) => f.file === 'alice/rss/index.rss')!;
    const rssBody = writer.files.get('alice/rss/index.rss')!;
    expect(rss).toEqual({
      file: 'alice/rss/index.rss',
      contentType: 'application/rss+xml; charset=utf-8',
      cacheControl: 'public, max-age=900',
      size: rssBody.length,
      sha256: createHash('sha256').update(rssBody).digest('hex'),
      md5: createHash('md5').update(rssBody).digest('hex'),
      keys: ['alice/rss/', 'alice/rss'],
      compressed: [],
    });
    expect(result.stderr).toContain('1 files under');
    expect(cli(['hosting', 'manifest', '--root', join(dir, 'missing')]).code).toBe(2);
  });
});
