import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSite } from '../../src/pipeline/site-build.js';
import { compressedFormOf, compressedPath, compress, verifyCompressed, type Encoding } from '../../src/paths/compression.js';
import type { SiteConfig } from '../../src/config/site-config.js';
import { createDemoDb, testConfig } from '../helpers/site-fixture.js';
import { readTree, touchedButSame, type TreeFile, undated } from '../helpers/tree.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * Pre-compressed forms in a real build into a folder: beside every document, only when asked,
 * rewritten only with their document, gone with it, and in line with the configuration when it
 * changes.
 */

const BOTH: Encoding[] = ['gzip', 'br'];

function site(compressList: Encoding[] = BOTH) {
  const fixture = createDemoDb({ users: 8, seed: 2 });
  const work = tempDir('vidfeeds-compression-');
  const out = join(work.dir, 'out');
  const stateFile = join(work.dir, 'state.sqlite');
  const configOf = (encodings: Encoding[]): SiteConfig => testConfig({ compress: encodings });
  const build = (encodings: Encoding[] = compressList, full = false) => buildSite({ db: fixture.file, out, stateFile, config: configOf(encodings), full });
  return { ...fixture, out, build };
}

/** Documents and forms of a tree, apart. */
function split(tree: Map<string, TreeFile>) {
  const documents = new Map<string, TreeFile>();
  const forms = new Map<string, TreeFile>();
  for (const [path, file] of tree) (compressedFormOf(path) === null ? documents : forms).set(path, file);
  return { documents, forms };
}

/** Every document has exactly the wanted forms, and each decompresses to it. */
function expectForms(tree: Map<string, TreeFile>, encodings: readonly Encoding[]): void {
  const { documents, forms } = split(tree);
  expect(documents.size).toBeGreaterThan(100);
  for (const [path, file] of documents) {
    for (const encoding of encodings) {
      const form = forms.get(compressedPath(path, encoding));
      expect(form, `${path}: its ${encoding} form`).toBeDefined();
      expect(verifyCompressed(file.body, form!.body, encoding), `${path} ${encoding}`).toEqual({ ok: true });
    }
  }
  for (const path of forms.keys()) {
    const { document, encoding } = compressedFormOf(path)!;
    expect(documents.has(document), `${path} has its document`).toBe(true);
    expect(encodings, `${path}: ${encoding} is configured`).toContain(encoding);
  }
  expect(forms.size).toBe(documents.size * encodings.length);
}

describe('pre-compressed forms', () => {
  it('are written beside every document only when configured, and never listed in a sitemap', () => {
    const plain = site([]);
    plain.build();
    const without = readTree(plain.out);
    expectForms(without, []);

    const { build, out } = site();
    const report = build();
    expect(report.failed).toEqual([]);
    const tree = readTree(out);
    expectForms(tree, BOTH);
    const sitemap = tree.get('sitemap.xml')!.body.toString('utf8');
    expect(sitemap).not.toMatch(/\.(gz|br)</);
    // Compression changes nothing in the documents themselves, the sitemap included.
    // (Both builds ran at other moments: the sitemap's lastmod dates are left out.)
    expect(undated('sitemap.xml', split(tree).documents.get('sitemap.xml')!.body).equals(undated('sitemap.xml', without.get('sitemap.xml')!.body))).toBe(true);
  });

  it('are rewritten with a changed document, and nothing else is', () => {
    const { build, out, db } = site();
    build();
    const before = readTree(out);
    db.prepare(`UPDATE users SET display_name = 'Alice Renamed' WHERE username = 'alice'`).run();
    const report = build();
    expect(report.mode).toBe('incremental');
    const after = readTree(out);
    expectForms(after, BOTH);
    // No file was rewritten with the bytes it had.
    expect(touchedButSame(before, after)).toEqual([]);
    const changed = [...split(after).documents.keys()].filter((path) => !after.get(path)!.body.equals(before.get(path)!.body));
    expect(changed).toContain('alice/hcard/index.html');
    for (const path of changed) {
      for (const encoding of BOTH) {
        const form = compressedPath(path, encoding);
        expect(after.get(form)!.body.equals(before.get(form)!.body), `${form} changed with its document`).toBe(false);
      }
    }
  });

  it('of an encoding no longer wanted go from beside a document that changed in the same build', () => {
    const { build, out, db } = site();
    build();
    db.prepare(`UPDATE users SET display_name = 'Alice Renamed' WHERE username = 'alice'`).run();
    build(['gzip']);
    const tree = readTree(out);
    // A .br left beside the new hCard would give brotli clients the old name.
    expect(tree.get('alice/hcard/index.html')!.body.toString()).toContain('Alice Renamed');
    expectForms(tree, ['gzip']);
  });

  it('go with their document when a user is deleted', () => {
    const { build, out, db } = site();
    build();
    expect([...readTree(out).keys()].filter((path) => path.startsWith('bob/')).length).toBeGreaterThan(0);
    db.prepare(`UPDATE users SET state = 'deleted' WHERE username = 'bob'`).run();
    const report = build();
    expect(report.removed).toBeGreaterThan(0);
    const tree = readTree(out);
    expect([...tree.keys()].filter((path) => path.startsWith('bob/'))).toEqual([]);
    expectForms(tree, BOTH);
  });

  it('follow the configuration: added beside unchanged documents, removed when no longer wanted', () => {
    const { build, out } = site([]);
    build();
    const plain = readTree(out);
    expectForms(plain, []);

    expect(build(BOTH).written).toBe(0);
    const both = readTree(out);
    expectForms(both, BOTH);
    // The documents themselves were left alone.
    expect(touchedButSame(plain, both)).toEqual([]);

    build(['gzip']);
    expectForms(readTree(out), ['gzip']);
    build([]);
    expectForms(readTree(out), []);
  });

  it('are repaired when the state is lost: the bytes on disk decide, forms included', () => {
    const { build, out, file } = site();
    build();
    // A form that no longer matches its document, and a form of an encoding no longer configured.
    const stale = join(out, 'alice/rss/index.rss.gz');
    writeFileSync(stale, compress(Buffer.from('old'), 'gzip'));
    const before = readTree(out);
    const other = tempDir('vidfeeds-compression-state-');
    buildSite({ db: file, out, stateFile: join(other.dir, 'fresh.sqlite'), config: testConfig({ compress: ['gzip'] }) });
    const after = readTree(out);
    expect(verifyCompressed(readFileSync(join(out, 'alice/rss/index.rss')), readFileSync(stale), 'gzip')).toEqual({ ok: true });
    expectForms(after, ['gzip']);
    // Rewritten: the stale form, and nothing else whose bytes were right. The sitemap is the
    // exception: without the state its lastmod dates are this build's (test/helpers/tree.ts).
    const rewritten = [...after].filter(([path, f]) => before.get(path)?.ino !== f.ino || before.get(path)?.mtimeNs !== f.mtimeNs).map(([path]) => path);
    expect(rewritten.filter((path) => !path.startsWith('sitemap'))).toEqual(['alice/rss/index.rss.gz']);
  });
});

describe('names', () => {
  it('refuse a user named like the compressed form of a site file, whatever the configuration', () => {
    for (const compressList of [[], BOTH] as Encoding[][]) {
      const { build, out, db } = site(compressList);
      db.prepare(`UPDATE users SET username = 'Robots.TXT.gz' WHERE username = 'bob'`).run();
      const report = build();
      expect(report.skipped.map((s) => `${s.key}: ${s.reason}`)).toContain('Robots.TXT.gz: is the name of a site-wide file');
      expect(report.failed).toEqual([]);
      expect(readTree(out).has('Robots.TXT.gz/rss/index.rss')).toBe(false);
    }
  });
});

describe('verifyCompressed', () => {
  it('accepts a form that decompresses to its document and names what is wrong with one that does not', () => {
    const document = Buffer.from('<rss>…</rss>', 'utf8');
    for (const encoding of BOTH) {
      expect(verifyCompressed(document, compress(document, encoding), encoding)).toEqual({ ok: true });
      const stale = verifyCompressed(document, compress(Buffer.from('<rss/>'), encoding), encoding);
      expect(stale.ok).toBe(false);
      expect(!stale.ok && stale.problem).toMatch(/stale/);
      const broken = verifyCompressed(document, Buffer.from('not compressed'), encoding);
      expect(!broken.ok && broken.problem).toMatch(new RegExp(`not valid ${encoding} data`));
    }
  });
});
