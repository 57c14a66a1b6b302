import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { FORMATS } from '../../src/formats/registry.js';
import { buildManifest, type Manifest } from '../../src/hosting/manifest.js';
import { routesOf } from '../../src/hosting/routes.js';
import { DeployRecord } from '../../src/deploy/deploy-record.js';
import { runDeploy, type DeployReport } from '../../src/deploy/run-deploy.js';
import { cli } from '../helpers/cli.js';
import { createDemoDb } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';
import { MemoryStore } from '../helpers/memory-store.js';

/**
 * A store whose listing is not in S3's key order (s3rver pages by walking its folders; Ceph's
 * unordered listings) can leave keys out at a page's edge. The deploy notices the disorder and
 * asks for what the listing left out before writing it again; with a listing in order it trusts
 * the listing, as S3's guarantee allows.
 */

const routes = routesOf(FORMATS);
let work: { dir: string; cleanup: () => void };
let out: string;
let manifest: Manifest;

beforeAll(() => {
  work = tempDir('vidfeeds-unordered-');
  const site = createDemoDb({ users: 4, seed: 5 });
  out = join(work.dir, 'out');
  try {
    expect(cli(['build', '--db', site.file, '--out', out]).code).toBe(0);
  } finally {
    site.cleanup();
  }
  manifest = buildManifest(routes, out, '/', 'vidfeeds test', () => 'public, max-age=300').manifest;
});

afterAll(() => work?.cleanup());

function deploy(store: MemoryStore, record: DeployRecord): Promise<DeployReport> {
  return runDeploy({ out, manifest, routes, target: { bucket: 'site', prefix: 'p/' }, store, concurrency: 4, dryRun: false, record, recordId: 'memory' });
}

describe('a deploy against a store whose listing leaves keys out', () => {
  it('asks for the keys an out-of-order listing left out, and writes none of them again', async () => {
    const store = new MemoryStore();
    const record = new DeployRecord(join(work.dir, 'record-a.json'));
    const first = await deploy(store, record);
    expect(first.unorderedListing).toBeNull();
    expect(store.puts.length).toBe(first.objects);

    const keys = [...store.objects.keys()].sort();
    const omitted = new Set([keys[3]!, keys[Math.floor(keys.length / 2)]!, keys.at(-1)!]);
    store.listing = { order: 'reversed', omit: omitted };
    store.puts = [];
    store.heads = [];
    const second = await deploy(store, record);

    expect(second.unorderedListing).toEqual({ before: keys.filter((k) => !omitted.has(k)).at(-1), after: keys.filter((k) => !omitted.has(k)).at(-2) });
    expect(store.puts).toEqual([]);
    expect(new Set(store.heads)).toEqual(omitted);
    expect(second.checked).toBe(omitted.size);
    expect(second.unchanged).toBe(second.objects);
    expect(second.deleted).toBe(0);
  });

  it('writes an object an out-of-order listing left out when the store does not hold it', async () => {
    const store = new MemoryStore();
    const record = new DeployRecord(join(work.dir, 'record-b.json'));
    await deploy(store, record);
    const keys = [...store.objects.keys()].sort();
    const gone = keys.find((k) => k.includes('/rss/'))!;
    store.objects.delete(gone);
    store.listing = { order: 'reversed', omit: new Set() };
    store.puts = [];
    const report = await deploy(store, record);
    expect(report.unorderedListing).not.toBeNull();
    expect(store.puts).toEqual([gone]);
    expect([...report.uploadedKeys]).toEqual([gone]);
    expect(report.checked).toBe(1);
  });

  it('trusts a listing in key order: what it leaves out is written again, without asking', async () => {
    const store = new MemoryStore();
    const record = new DeployRecord(join(work.dir, 'record-c.json'));
    await deploy(store, record);
    const omitted = [...store.objects.keys()].sort()[2]!;
    store.listing = { order: 'sorted', omit: new Set([omitted]) };
    store.puts = [];
    store.heads = [];
    const report = await deploy(store, record);
    expect(report.unorderedListing).toBeNull();
    expect(store.heads).toEqual([]);
    expect(store.puts).toEqual([omitted]);
  });
});
