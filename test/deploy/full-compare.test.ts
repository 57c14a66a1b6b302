import { beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FORMATS } from '../../src/formats/registry.js';
import { buildManifest, manifestEntries, type ManifestEntry } from '../../src/hosting/manifest.js';
import { routesOf } from '../../src/hosting/routes.js';
import { byCodePoint } from '../../src/db/by-code-point.js';
import { DeployRecord } from '../../src/deploy/deploy-record.js';
import { fullCompare, type CompareRequest } from '../../src/deploy/full-compare.js';
import type { StoredObject } from '../../src/deploy/object-store.js';
import { runDeploy, type DeployReport } from '../../src/deploy/run-deploy.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The full compare reads the tree one file at a time while the store lists the prefix, keeps both
 * in a temporary database, and reads its plan back a page at a time: these trees are larger than a page of the plan
 * (512 documents) and than a batch of deletions (1,000 keys), so the order of the steps, the
 * deletions' order and batches, and what a failure leaves not attempted are checked across pages.
 */

const routes = routesOf(FORMATS);
const USERS = 1300;
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
let out: string;

function writeTree(root: string, edited: (i: number) => boolean): void {
  for (let i = 0; i < USERS; i++) {
    const folder = join(root, `u${String(i).padStart(4, '0')}`, 'rss');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'index.rss'), `<rss version="2.0"><channel><title>${i}${edited(i) ? ' edited' : ''}</title></channel></rss>\n`);
  }
  writeFileSync(join(root, 'robots.txt'), 'User-agent: *\n');
}

function entries(): AsyncIterable<ManifestEntry> {
  return manifestEntries(new AbortController().signal, routes, out, '', 'vidfeeds test', () => 'public, max-age=300');
}

function deploy(store: MemoryStore, record: DeployRecord, owed?: { changed: string[]; removed: string[] }, listKeys = true): Promise<DeployReport> {
  return runDeploy({
    listKeys,
    out,
    manifest: { files: entries() },
    routes,
    target: { bucket: 'site', prefix: 'p/' },
    store,
    concurrency: 8,
    dryRun: false,
    record,
    recordId: 'memory',
    // Read during the call, as the plan hands them out.
    beforeWrites: (changed, removed) => Object.assign(owed ?? {}, { changed: [...changed], removed: [...removed] }),
  });
}

beforeAll(() => {
  out = join(tempDir('vidfeeds-full-compare-').dir, 'out');
  writeTree(out, () => false);
});

describe('the full compare of a tree larger than a page of its plan', () => {
  it('writes every new document before the site files and deletes what the tree lacks last, in key order, in batches', async () => {
    const store = new MemoryStore();
    const stale = Array.from({ length: 1100 }, (_, i) => `p/z${i}/rss/`);
    for (const key of [...stale, 'p/README.operator']) await store.put({ key, body: Buffer.from(key), contentType: 'text/plain', cacheControl: 'no-cache', md5: '', metadata: {} });
    store.puts = [];
    const owed = { changed: [] as string[], removed: [] as string[] };
    const report = await deploy(store, new DeployRecord(join(out, '..', 'record-a.json')), owed);

    expect(report.documents).toBe(USERS + 1);
    expect(report.objects).toBe(USERS * 2 + 1);
    expect(report.uploaded).toEqual({ new: USERS * 2, changed: 0, site: 1 });
    expect(new Set(store.puts).size).toBe(USERS * 2 + 1);
    expect(store.puts.at(-1)).toBe('p/robots.txt');
    expect(store.removes.map((batch) => batch.length).sort((a, b) => a - b)).toEqual([100, 1000]);
    for (const batch of store.removes) expect(batch).toEqual([...batch].sort(byBytes));
    expect(store.removes.flat().sort(byBytes)).toEqual([...stale].sort(byBytes));
    expect([...report.deletedKeys].sort(byBytes)).toEqual([...stale].sort(byBytes));
    expect(store.objects.has('p/README.operator')).toBe(true);
    expect(owed.changed).toHaveLength(USERS + 1);
    expect(owed.changed.at(-1)).toBe('robots.txt');
    expect(owed.removed).toHaveLength(1100);
    expect([...report.notAttempted]).toEqual([]);
  });

  it('after an edit of more documents than a page, writes exactly them; a failed write leaves the rest, deletions included, to the next deploy', async () => {
    const store = new MemoryStore();
    const record = new DeployRecord(join(out, '..', 'record-b.json'));
    writeTree(out, () => false);
    await deploy(store, record);
    await store.put({ key: 'p/zz/rss/', body: Buffer.from('gone'), contentType: 'text/plain', cacheControl: 'no-cache', md5: '', metadata: {} });
    writeTree(out, (i) => i < 700);
    const changed = Array.from({ length: 700 }, (_, i) => `u${String(i).padStart(4, '0')}`).flatMap((user) => [`p/${user}/rss/`, `p/${user}/rss`]);

    store.puts = [];
    store.failingPut = 801;
    const failed = await deploy(store, record);
    expect(failed.failed.map((f) => f.key)).toEqual([store.puts[800]]);
    const attempted = [...failed.uploadedKeys, ...failed.failed.map((f) => f.key)];
    expect([...attempted, ...[...failed.notAttempted].filter((key) => key !== 'p/zz/rss/')].sort(byBytes)).toEqual([...changed].sort(byBytes));
    expect([...failed.notAttempted]).toContain('p/zz/rss/');
    expect(failed.uploaded.changed).toBe(failed.uploadedKeys.length);
    expect(store.removes).toEqual([]);

    store.puts = [];
    store.failingPut = null;
    const resumed = await deploy(store, record);
    expect(store.puts.sort(byBytes)).toEqual([...failed.notAttempted].concat(failed.failed.map((f) => f.key)).filter((key) => key !== 'p/zz/rss/').sort(byBytes));
    expect([...resumed.deletedKeys]).toEqual(['p/zz/rss/']);
    expect(resumed.unchanged).toBe(USERS * 2 + 1 - store.puts.length);

    store.puts = [];
    const again = await deploy(store, record);
    expect(store.puts).toEqual([]);
    expect(again.unchanged).toBe(USERS * 2 + 1);
  });

  it('counts what it wrote and deleted without listing the keys when not asked to (their lists grow with the site)', async () => {
    const store = new MemoryStore();
    await store.put({ key: 'p/zz/rss/', body: Buffer.from('gone'), contentType: 'text/plain', cacheControl: 'no-cache', md5: '', metadata: {} });
    store.puts = [];
    const report = await deploy(store, new DeployRecord(join(out, '..', 'record-c.json')), undefined, false);
    expect(store.puts).toHaveLength(USERS * 2 + 1);
    expect(report.uploaded).toEqual({ new: USERS * 2, changed: 0, site: 1 });
    expect(report.deleted).toBe(1);
    expect([[...report.uploadedKeys], [...report.deletedKeys]]).toEqual([[], []]);
  });
});

describe('the tree and the listing, read side by side', () => {
  const request = (files: AsyncIterable<ManifestEntry>, store: MemoryStore): CompareRequest => ({
    manifest: { files },
    routes,
    target: { bucket: 'site', prefix: 'p/' },
    store,
    concurrency: 8,
    record: new DeployRecord(join(out, '..', 'record-side.json')),
    recordId: 'memory',
  });

  it('stops reading the tree when the listing fails, and fails with the listing\'s error', async () => {
    let read = 0;
    async function* counted(): AsyncIterable<ManifestEntry> {
      for await (const entry of entries()) {
        read++;
        yield entry;
      }
    }
    const store = new MemoryStore();
    store.list = async function* (): AsyncIterable<StoredObject> {
      await new Promise((resolve) => setImmediate(resolve));
      throw Object.assign(new Error('Access Denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });
    };
    await expect(fullCompare(request(counted(), store), { unorderedListing: null })).rejects.toThrow('Access Denied');
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(USERS);
  });

  it('stops listing when the tree cannot be read, and fails with the tree\'s error', async () => {
    let listed = 0;
    let ended = false;
    const store = new MemoryStore();
    store.list = async function* (): AsyncIterable<StoredObject> {
      try {
        for (let i = 0; i < 1_000_000; i++) {
          if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
          listed++;
          yield { key: `p/k${i}`, etag: 'e', size: 1 };
        }
      } finally {
        ended = true;
      }
    };
    async function* failing(): AsyncIterable<ManifestEntry> {
      let n = 0;
      for await (const entry of entries()) {
        if (++n === 200) throw Object.assign(new Error('EACCES: permission denied, open'), { code: 'EACCES' });
        yield entry;
      }
    }
    await expect(fullCompare(request(failing(), store), { unorderedListing: null })).rejects.toThrow('EACCES');
    expect(ended).toBe(true);
    expect(listed).toBeLessThan(1_000_000);
  });
});

describe('the tree in key order', () => {
  it('compares keys by their UTF-8 bytes, as S3 lists them', () => {
    const keys = ['a/b', 'a-b', 'a.b', 'a', 'a\uE000', 'a\uFFFF', 'a\u{1F600}', 'a\u00e9', 'ab', ''];
    expect([...keys].sort(byCodePoint)).toEqual([...keys].sort(byBytes));
  });

  it('reads every document of the tree with its compressed forms, as the whole manifest lists them', async () => {
    const root = join(tempDir('vidfeeds-key-order-').dir, 'out');
    for (const user of ['a', 'a-b', 'a.b']) {
      mkdirSync(join(root, user, 'rss'), { recursive: true });
      writeFileSync(join(root, user, 'rss', 'index.rss'), `<rss>${user}</rss>`);
    }
    writeFileSync(join(root, 'a', 'rss', 'index.rss.gz'), 'not really gzip');
    writeFileSync(join(root, '.hidden'), 'not served');
    const read: ManifestEntry[] = [];
    for await (const entry of manifestEntries(new AbortController().signal, routes, root, '', 'vidfeeds test', () => 'no-cache')) read.push(entry);
    // In the order the file system gives: the compare matches the store's listing by key.
    read.sort((x, y) => byCodePoint(x.file, y.file));
    expect(read.map((e) => e.file)).toEqual(['a-b/rss/index.rss', 'a.b/rss/index.rss', 'a/rss/index.rss']);
    expect(read[2]!.compressed.map((c) => [c.file, c.contentEncoding])).toEqual([['a/rss/index.rss.gz', 'gzip']]);
    const whole = buildManifest(routes, root, '', 'vidfeeds test', () => 'no-cache').manifest.files;
    expect(whole).toEqual(read);
  });
});
