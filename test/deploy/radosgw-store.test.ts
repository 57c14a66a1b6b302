import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createBucket, readObjects } from '../helpers/boto3.js';
import { cli, readTree } from '../helpers/cli.js';
import { editDemoSite, expectedObjects, manifest, productCacheControl, productType } from '../helpers/deploy-objects.js';
import { AWKWARD_KEYS, listThroughStore, putRequest, withEnvironment } from '../helpers/put-requests.js';
import { radosgwMissing, startRadosgw, type RunningRadosgw } from '../helpers/radosgw.js';
import { runCli } from '../helpers/s3.js';
import { createDemoDb } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';
import { S3Store } from '../../src/deploy/s3-store.js';
import type { PutRequest } from '../../src/deploy/object-store.js';

/**
 * `vidfeeds deploy` against a production object store: Ceph's RADOS Gateway on a single-node
 * cluster the test starts (src/bench/radosgw.ts), the store read back by boto3, a client that
 * shares no code with the deploy's AWS SDK. The gateway checks each PUT's SigV4 signature and
 * Content-MD5 (s3rver checks neither), so the deploy's own PUTs (src/deploy/s3-direct.ts) meet a
 * store's check of their signing here.
 */

const BASE = 'https://videos.example.org';
const HUB = 'https://hub.example.net/';
const BUCKET = 'site';
const missing = radosgwMissing();

describe.skipIf(missing !== null)('vidfeeds deploy to Ceph RADOS Gateway', () => {
  let store: RunningRadosgw;
  let work: { dir: string; cleanup: () => void };
  let site: ReturnType<typeof createDemoDb>;
  let config: string;
  let out: string;

  beforeAll(async () => {
    store = await startRadosgw();
    createBucket(store, BUCKET);
    work = tempDir('vidfeeds-rgw-deploy-');
    site = createDemoDb({ users: 3, seed: 5 });
    out = join(work.dir, 'out');
    config = join(work.dir, 'vidfeeds.config.json');
    writeFileSync(config, JSON.stringify({ baseUrl: BASE, compress: ['gzip'], websub: { hubs: [HUB] }, notifyAfter: 'deploy' }));
    const build = cli(['build', '--db', site.file, '--out', out, '--config', config]);
    expect(build.code, build.stderr).toBe(0);
  });

  afterAll(async () => {
    await store?.stop();
    site?.cleanup();
    work?.cleanup();
  });

  const environment = () => ({ AWS_ACCESS_KEY_ID: store.accessKeyId, AWS_SECRET_ACCESS_KEY: store.secretAccessKey, AWS_REGION: store.region });

  /** PUTs through the deploy's store, in this process, with `environment` as the SDK chain's; each result or error. */
  function putAll(requests: PutRequest[], env: Record<string, string> = environment()): Promise<unknown[]> {
    return withEnvironment(env, async () => {
      const s3 = new S3Store({ target: { bucket: BUCKET, prefix: '' }, endpoint: store.endpoint, policy: { tries: 2, timeoutMs: 30_000, stop: new AbortController().signal }, concurrency: 4 });
      try {
        return await Promise.all(requests.map((request) => s3.put(request).catch((error: unknown) => error)));
      } finally {
        s3.close();
      }
    });
  }

  function deploy() {
    const env = { AWS_ACCESS_KEY_ID: store.accessKeyId, AWS_SECRET_ACCESS_KEY: store.secretAccessKey, AWS_REGION: store.region };
    return runCli(['deploy', '--out', out, '--to', `s3://${BUCKET}/videos`, '--endpoint', store.endpoint, '--config', config, '--no-notify', '--json'], { cwd: work.dir, env });
  }

  /** The store under the prefix, read by boto3, against what the tree's manifest asks for. */
  function expectStoreEqualsTree(): number {
    const expected = expectedObjects(manifest(out, config), 'videos');
    const stored = readObjects(store, BUCKET, 'videos/');
    expect([...stored.keys()].sort()).toEqual([...expected.keys()].sort());
    const tree = readTree(out);
    for (const [key, object] of expected) {
      const got = stored.get(key)!;
      expect(got.body.equals(tree.get(object.file)!), `${key}: bytes`).toBe(true);
      expect(got.contentType, key).toBe(productType(object.document));
      expect(got.cacheControl, key).toBe(productCacheControl(object.document));
      expect(got.contentEncoding, key).toBe(object.encoding);
      const isFeed = /\/(rss|atom)\/index\.(rss|atom)$/.test(object.document);
      const [owner, format] = object.document.split('/');
      expect(got.metadata.link, key).toBe(isFeed ? `<${HUB}>; rel="hub", <${BASE}/${encodeURI(owner!)}/${format}/>; rel="self"` : undefined);
    }
    return expected.size;
  }

  it('stores every object of a first deploy with its bytes, type, Cache-Control, encoding and hub link', async () => {
    const result = await deploy();
    expect(result.code, `${result.stderr}\n${store.logs()}`).toBe(0);
    const count = expectStoreEqualsTree();
    expect(count).toBeGreaterThan(20);
    expect(JSON.parse(result.stdout).counts.uploaded).toBe(count);
  });

  it('writes nothing when nothing changed, then after an edit leaves the store equal to the new tree', async () => {
    const unchanged = await deploy();
    expect(unchanged.code, unchanged.stderr).toBe(0);
    expect(JSON.parse(unchanged.stdout).counts).toMatchObject({ uploaded: 0, deleted: 0 });

    const { hidden } = editDemoSite(site.db);
    expect(readObjects(store, BUCKET, `videos/${hidden}/`).size).toBeGreaterThan(0);
    const build = cli(['build', '--db', site.file, '--out', out, '--config', config]);
    expect(build.code, build.stderr).toBe(0);

    const result = await deploy();
    expect(result.code, `${result.stderr}\n${store.logs()}`).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.counts.uploaded).toBeGreaterThan(0);
    expect(report.counts.deleted).toBeGreaterThan(0);
    expectStoreEqualsTree();
    expect(readObjects(store, BUCKET, 'videos/brandnew1/').size).toBeGreaterThan(0);
    expect(readObjects(store, BUCKET, `videos/${hidden}/`).size).toBe(0);
  });

  it('takes PUTs of keys a path must escape, each signed and its Content-MD5 checked, boto3 reads back their bytes and headers, and the listing names them whole', async () => {
    const requests = AWKWARD_KEYS.map((key, i) => putRequest(`awkward/${key}`, i % 2 === 0 ? { contentEncoding: 'gzip' } : {}));
    expect(await putAll(requests)).toEqual(requests.map((request) => request.md5));
    const stored = readObjects(store, BUCKET, 'awkward/');
    expect([...stored.keys()].sort()).toEqual(requests.map((request) => request.key).sort());
    for (const request of requests) {
      const got = stored.get(request.key)!;
      expect(got.body.equals(Buffer.from(request.body)), request.key).toBe(true);
      expect(got, request.key).toMatchObject({ contentType: request.contentType, cacheControl: request.cacheControl, contentEncoding: request.contentEncoding, metadata: request.metadata });
    }

    const listed = await listThroughStore(store.endpoint, BUCKET, 'awkward/', environment(), { tries: 1, timeoutMs: 30_000, stop: new AbortController().signal });
    // In S3's order (UTF-8 bytes), each with the size and ETag boto3 reads.
    expect(listed.map((o) => o.key)).toEqual(requests.map((request) => request.key).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    for (const object of listed) expect(object, object.key).toEqual({ key: object.key, etag: stored.get(object.key)!.etag, size: stored.get(object.key)!.body.length });

    const [wrongSecret] = await putAll([putRequest('refused/signature')], { ...environment(), AWS_SECRET_ACCESS_KEY: `${store.secretAccessKey}x` });
    expect(wrongSecret).toMatchObject({ status: 403, code: 'SignatureDoesNotMatch', transient: false });
    const [damaged] = await putAll([putRequest('refused/digest', { md5: 'ff'.repeat(16) })]);
    expect(damaged).toMatchObject({ status: 400, code: 'BadDigest', transient: false });
    expect(readObjects(store, BUCKET, 'refused/').size).toBe(0);
  });
});
