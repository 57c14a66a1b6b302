import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyCompressed } from '../../src/paths/compression.js';
import { FORMATS } from '../../src/formats/registry.js';
import { cli } from '../helpers/cli.js';
import { URL_TABLE } from '../helpers/served-urls.js';
import { createDemoDb, createTestDb, insertUser, insertVideo, T0 } from '../helpers/site-fixture.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';

/**
 * Cache-Control and compressed forms in what the host configurations and the upload manifest
 * say, and the configuration's checks. (nginx and `vidfeeds serve` are run for real in
 * precompressed.test.ts; a real Apache is another test's.)
 */

function work(): string {
  const t = tempDir('vidfeeds-cache-');
  return t.dir;
}

function configFile(dir: string, config: unknown): string {
  const file = join(dir, 'vidfeeds.config.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

describe('cache classes', () => {
  it('put feeds short, profiles and oEmbed long, site files in between, for every format of the table', () => {
    const classes = Object.fromEntries(FORMATS.map((f) => [f.name, f.cacheClass]));
    expect(classes).toEqual({
      rss: 'feeds', atom: 'feeds', 'rss-archive': 'feeds', 'atom-archive': 'feeds', recommendations: 'feeds', xspf: 'feeds', apml: 'feeds', opml: 'feeds',
      foaf: 'profiles', hcard: 'profiles', oembed: 'profiles', 'oembed-json': 'profiles', 'oembed-xml': 'profiles', 'oembed-html': 'profiles',
      embed: 'profiles', head: 'profiles',
      sitemap: 'site', robots: 'site', opensearch: 'site', crossdomain: 'site', 'indexnow-key': 'site',
    });
  });
});

describe('the configuration', () => {
  it('refuses an unknown encoding, format or Cache-Control value before any file is touched, with exit code 2', () => {
    const dir = work();
    const fixture = createDemoDb({ users: 3, seed: 1 });
    const cases: Array<[unknown, RegExp]> = [
      [{ compress: ['zstd'] }, /compress\[0\] must be one of "gzip", "br", not "zstd"/],
      [{ compress: ['gzip', 'gzip'] }, /compress names "gzip" twice/],
      [{ cacheControl: { formats: { rsss: 'public' } } }, /cacheControl\.formats\.rsss is not a format name \(vidfeeds formats lists them\); known: .*\brss\b.*; did you mean "rss"\?/],
      [{ cacheControl: { feeds: 'max-age=$x' } }, /cacheControl\.feeds must be Cache-Control directives/],
      [{ cacheControl: { formats: { rss: 'public\nX-Injected: 1' } } }, /cacheControl\.formats\.rss must be Cache-Control directives such as "public, max-age=900", not "public\\nX-Injected: 1"/],
      [{ cacheControl: { fast: 'public' } }, /cacheControl\.fast is not a known setting/],
    ];
    for (const [config, message] of cases) {
      const out = join(dir, 'out');
      const result = cli(['build', '--db', fixture.file, '--out', out, '--config', configFile(dir, config)]);
      expect(result.code, JSON.stringify(config)).toBe(2);
      expect(result.stderr, JSON.stringify(config)).toMatch(message);
      expect(existsSync(out)).toBe(false);
    }
  });

  it('makes `hosting nginx --brotli-static` refuse a configuration that writes no .br files', () => {
    const dir = work();
    const result = cli(['hosting', 'nginx', '--root', dir, '--brotli-static', '--config', configFile(dir, { compress: ['gzip'] })]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--brotli-static sends the build\'s .br files, but the configuration\'s compress does not write them');
  });
});

const config = { compress: ['gzip', 'br'], cacheControl: { site: 'public, max-age=600', formats: { atom: 'no-cache' } } };

describe('host configurations', () => {
  it('nginx: gzip_static, brotli_static only when asked, a Cache-Control per location', () => {
    const dir = work();
    const file = configFile(dir, config);
    const text = cli(['hosting', 'nginx', '--root', dir, '--config', file]).stdout;
    expect(text).toContain('gzip_static on;');
    expect(text).not.toContain('brotli_static');
    expect(text).toContain('disable_symlinks on from=$document_root;');
    expect(text).toMatch(/location = "\/robots\.txt" \{\n(?: {8}.*\n)*? {8}add_header Cache-Control "public, max-age=600";/);
    expect(text).toMatch(/\/atom\/\?\$" \{\n(?: {8}.*\n)*? {8}add_header Cache-Control "no-cache";/);
    // A location's add_header drops the server's: every location with one repeats nosniff.
    expect(text.match(/add_header Cache-Control/g)!.length).toBe(text.match(/ {8}add_header X-Content-Type-Options nosniff always;/g)!.length);
    const brotli = cli(['hosting', 'nginx', '--root', dir, '--config', file, '--brotli-static']).stdout;
    expect(brotli).toContain('brotli_static on;');
    const plain = cli(['hosting', 'nginx', '--root', dir]).stdout;
    expect(plain).not.toContain('gzip_static');
  });

  it('Apache: the .gz/.br of each URL when the client takes it and the file is there, with the document\'s type and its encoding', () => {
    const text = cli(['hosting', 'apache', '--config', configFile(work(), config)]).stdout;
    expect(text).toContain(
      [
        'RewriteCond %{HTTP:Accept-Encoding} "(^|[ ,])br( *($|,)| *;)" [NC]',
        'RewriteCond %{HTTP:Accept-Encoding} "!(^|[ ,])br *; *q=0(\\.0*)? *($|,)" [NC]',
        'RewriteCond %{REQUEST_FILENAME} "^(.*?)/?$"',
        'RewriteCond "%1/index.rss.br" -f',
        'RewriteRule "^([^/.][^/]*)/rss/?$" "$1/rss/index.rss.br" [B=?#%,END]',
      ].join('\n'),
    );
    // Brotli is tried first, then gzip, then the document.
    const rss = text.slice(text.indexOf('# rss:'), text.indexOf('# atom:'));
    expect(rss.indexOf('index.rss.br')).toBeLessThan(rss.indexOf('index.rss.gz'));
    expect(rss.trimEnd().endsWith('RewriteRule "^([^/.][^/]*)/rss/?$" "$1/rss/index.rss" [B=?#%,END]')).toBe(true);
    expect(text).toContain('RewriteCond "%1.gz" -f\nRewriteRule "^robots\\.txt$" "$0.gz" [B=?#%,END]');
    // `?format=xml` on the oEmbed endpoint: the forms of the xml file, then the file.
    expect(text).toContain('RewriteCond %{QUERY_STRING} "(^|&)format=xml(&|$)"\nRewriteCond %{HTTP:Accept-Encoding} "(^|[ ,])br( *($|,)| *;)" [NC]');
    expect(text).toContain('RewriteCond "%1/xml.gz" -f\nRewriteRule "^([^/.][^/]*)/oembed/?$" "$1/oembed/xml.gz" [B=?#%,END]');
    expect(text).toContain(
      '<Files "index.atom.gz">\n  ForceType "application/atom+xml; charset=utf-8"\n  <IfModule mod_headers.c>\n    Header set Cache-Control "no-cache"\n' +
        '    Header set Content-Encoding gzip "expr=%{REQUEST_STATUS} != 304"\n    Header set Vary Accept-Encoding\n  </IfModule>\n  SetEnv no-gzip 1\n</Files>',
    );
    for (const row of URL_TABLE) expect(text, row.url).toContain(`ForceType "${row.type}"`);
    expect(text).not.toMatch(/\.(gz|br)"?\s*-\s*\[END\]/);
  });

  it('_headers: the Cache-Control of each URL pattern', () => {
    const text = cli(['hosting', 'headers', '--config', configFile(work(), config)]).stdout;
    expect(text).toContain('/*/atom/\n  Content-Type: application/atom+xml; charset=utf-8\n  Cache-Control: no-cache\n');
    expect(text).toContain('/*/rss/\n  Content-Type: application/rss+xml; charset=utf-8\n  Cache-Control: public, max-age=900\n');
    expect(text).toContain('/*/foaf/\n  Content-Type: application/rdf+xml; charset=utf-8\n  Cache-Control: public, max-age=86400\n');
    expect(text).toContain('/robots.txt\n  Content-Type: text/plain; charset=utf-8\n  Cache-Control: public, max-age=600\n');
  });
});

describe('the upload manifest', () => {
  it('gives each file its size, SHA-256 and Cache-Control, and its compressed forms with their encoding', () => {
    const dir = work();
    const fixture = createDemoDb({ users: 4, seed: 3 });
    const file = configFile(dir, config);
    const out = join(dir, 'out');
    expect(cli(['build', '--db', fixture.file, '--out', out, '--config', file]).code).toBe(0);
    writeFileSync(join(out, 'stray.txt.gz'), 'x');
    const result = cli(['hosting', 'manifest', '--root', out, '--config', file]);
    expect(result.code, result.stderr).toBe(0);
    const manifest = JSON.parse(result.stdout) as {
      files: Array<{ file: string; contentType: string; cacheControl: string; headers?: Record<string, string>; size: number; sha256: string; keys: string[]; compressed: Array<{ file: string; contentEncoding: 'gzip' | 'br'; size: number; sha256: string }> }>;
    };
    const sha256 = (path: string) => createHash('sha256').update(readFileSync(join(out, path))).digest('hex');
    expect(manifest.files.length).toBeGreaterThan(40);
    for (const entry of manifest.files) {
      expect(entry.size, entry.file).toBe(readFileSync(join(out, entry.file)).length);
      expect(entry.sha256, entry.file).toBe(sha256(entry.file));
      expect(entry.compressed.map((c) => c.contentEncoding).sort(), entry.file).toEqual(['br', 'gzip']);
      for (const form of entry.compressed) {
        expect(form.file).toBe(`${entry.file}${form.contentEncoding === 'gzip' ? '.gz' : '.br'}`);
        expect(form.sha256).toBe(sha256(form.file));
        expect(form.size).toBe(readFileSync(join(out, form.file)).length);
        expect(verifyCompressed(readFileSync(join(out, entry.file)), readFileSync(join(out, form.file)), form.contentEncoding)).toEqual({ ok: true });
      }
    }
    const atom = manifest.files.find((f) => f.file === 'alice/atom/index.atom')!;
    expect(atom).toMatchObject({ contentType: 'application/atom+xml; charset=utf-8', cacheControl: 'no-cache', keys: ['alice/atom/', 'alice/atom'] });
    expect(manifest.files.find((f) => f.file === 'robots.txt')!.cacheControl).toBe('public, max-age=600');
    // The embed pages carry the header that lets any site frame them; no other file has one.
    const embeds = manifest.files.filter((f) => f.file.endsWith('/embed/index.html'));
    expect(embeds.length).toBeGreaterThan(5);
    for (const entry of manifest.files) {
      expect(entry.headers, entry.file).toEqual(entry.file.endsWith('/embed/index.html') ? { 'Content-Security-Policy': 'frame-ancestors *' } : undefined);
    }
    expect(result.stderr).toContain('1 files under');
    expect(result.stderr).toContain('stray.txt.gz');
  });

  it('lists archive pages numbered by ids past 10 digits, which check finds as built', () => {
    // 40 public videos with ids past 10^10: the 20 beyond the feed are the RSS archive's pages
    // 10000000206 and 10000000209 (10000000207 starts the second, and a page is numbered by the id
    // of its newest row, docs/formats.md).
    const dir = work();
    const fixture = createTestDb();
    cleanUpAfterTest(fixture.cleanup);
    const u = insertUser(fixture.db, { username: 'many' });
    fixture.db.transaction(() => {
      for (let i = 0; i < 40; i++) insertVideo(fixture.db, u.id, { id: 10_000_000_190 + i, created_at: T0 + i });
    })();
    const out = join(dir, 'out');
    const built = cli(['build', '--db', fixture.file, '--out', out, '--base-url', 'https://videos.example.org']);
    expect(built.code, built.stderr).toBe(0);
    expect(readdirSync(join(out, 'many/rss/archive')).sort()).toEqual(['10000000206', '10000000209']);
    const result = cli(['hosting', 'manifest', '--root', out]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toMatch(/not documents/);
    const manifest = JSON.parse(result.stdout) as { files: Array<{ file: string; keys: string[] }> };
    const pages = manifest.files.filter((f) => f.file.startsWith('many/rss/archive/'));
    expect(pages.map((f) => f.file).sort()).toEqual(['many/rss/archive/10000000206/page.rss', 'many/rss/archive/10000000209/page.rss']);
    expect(pages.find((f) => f.file === 'many/rss/archive/10000000209/page.rss')?.keys).toEqual(['many/rss/archive/10000000209/', 'many/rss/archive/10000000209']);
    const check = cli(['check', '--out', out, '--db', fixture.file]);
    expect(check.code, `${check.stdout}${check.stderr}`).toBe(0);
  });
});
