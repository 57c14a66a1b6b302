import { describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { cli, readTree } from '../helpers/cli.js';
import { expectedObjects, manifest as treeManifest, productCacheControl, productType, type ManifestFile } from '../helpers/deploy-objects.js';
import { BUCKET, runCli, whenReady, type LoggedRequest } from '../helpers/s3.js';
import { insertVideo } from '../helpers/site-fixture.js';
import { useDeployFixture } from '../helpers/deploy-fixture.js';
import { schemaChecked } from '../helpers/report-schema.js';

/**
 * `vidfeeds deploy` against a local S3-compatible store (s3rver), through the AWS SDK as a user's
 * S3 is reached (endpoint override, path-style): what it stores, what a second deploy writes and
 * deletes, the order an observer sees, resuming, retries and failures.
 */

const BASE = 'https://videos.example.org';
const HUB = 'https://hub.example.net/';

const fx = useDeployFixture('vidfeeds-deploy-', { users: 6, seed: 11 }, { baseUrl: BASE, compress: ['gzip', 'br'], websub: { hubs: [HUB] }, notifyAfter: 'deploy' });

function deploy(prefix: string, extra: string[] = [], onStart?: (child: ChildProcess) => void) {
  return runCli(['deploy', '--out', fx.out, '--to', `s3://${BUCKET}/${prefix}`, '--endpoint', fx.s3.endpoint, '--config', fx.config, '--no-notify', '--json', ...extra], { cwd: fx.dir, onStart }).then(schemaChecked);
}

function manifest(): ManifestFile[] {
  return treeManifest(fx.out, fx.config);
}

const writes = (log: readonly LoggedRequest[]) => log.filter((r) => r.method === 'PUT' && r.key !== '' && r.status === 200);
const deletes = (log: readonly LoggedRequest[]) => log.filter((r) => r.method === 'POST' && r.query.includes('delete'));

describe('vidfeeds deploy to an S3-compatible store', () => {
  it('stores every object of a first deploy under its keys with its bytes, type, Cache-Control, encoding and hub link', async () => {
    const result = await deploy('videos');
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    const expected = expectedObjects(manifest(), 'videos');
    expect(report.counts.uploaded).toBe(expected.size);
    expect(new Set(await fx.s3.keys())).toEqual(new Set(expected.keys()));
    const tree = readTree(fx.out);
    for (const [key, object] of expected) {
      const stored = await fx.s3.get(key);
      expect(stored.body.equals(tree.get(object.file)!), key).toBe(true);
      expect(stored.contentType, key).toBe(productType(object.document));
      expect(stored.cacheControl, key).toBe(productCacheControl(object.document));
      expect(stored.contentEncoding, key).toBe(object.encoding);
      const isFeed = /\/(rss|atom)\/index\.(rss|atom)$/.test(object.document);
      expect(stored.metadata.link, key).toBe(isFeed ? `<${HUB}>; rel="hub", <${BASE}/${encodeURI(object.document.split('/')[0]!)}/${object.document.split('/')[1]}/>; rel="self"` : undefined);
    }
  });

  it('writes nothing when nothing changed', async () => {
    fx.s3.log.length = 0;
    const result = await deploy('videos');
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.counts).toMatchObject({ uploaded: 0, deleted: 0, checked: 0 });
    expect(writes(fx.s3.log)).toEqual([]);
    expect(deletes(fx.s3.log)).toEqual([]);
  });

  it('after one edit, writes exactly the changed objects and deletes exactly the removed ones, in an order no reader can catch half-done', async () => {
    const before = readTree(fx.out);
    const oldObjects = expectedObjects(manifest(), 'videos');
    const uploader = fx.site.db.prepare(`SELECT user_id AS id FROM videos WHERE visibility = 'public' ORDER BY id LIMIT 1`).get() as { id: number };
    const [edited, hidden] = fx.site.db.prepare(`SELECT public_id FROM videos WHERE visibility = 'public' ORDER BY id LIMIT 2`).all() as Array<{ public_id: string }>;
    fx.site.db.prepare(`UPDATE videos SET title = 'A title edited for the deploy' WHERE public_id = ?`).run(edited!.public_id);
    fx.site.db.prepare(`UPDATE videos SET visibility = 'private' WHERE public_id = ?`).run(hidden!.public_id);
    insertVideo(fx.site.db, uploader.id, { public_id: 'brandnew1', title: 'A new video' });
    const build = cli(['build', '--db', fx.site.file, '--out', fx.out, '--config', fx.config, '--json']);
    expect(build.code, build.stderr).toBe(0);
    const after = readTree(fx.out);
    const changedFiles = new Set([...after].filter(([file, body]) => !before.get(file)?.equals(body)).map(([file]) => file));
    const removedFiles = new Set([...before.keys()].filter((file) => !after.has(file)));
    expect(removedFiles.size).toBeGreaterThan(0);
    expect([...changedFiles].some((f) => f.startsWith('brandnew1/'))).toBe(true);

    const newObjects = expectedObjects(manifest(), 'videos');
    const expectedUploads = [...newObjects].filter(([, o]) => changedFiles.has(o.file)).map(([key]) => key);
    const expectedDeletes = [...oldObjects.keys()].filter((key) => !newObjects.has(key));
    expect(expectedDeletes.every((key) => removedFiles.has(oldObjects.get(key)!.file))).toBe(true);

    fx.s3.log.length = 0;
    fx.s3.delayMs = 3;
    const result = await deploy('videos', ['--concurrency', '8']);
    fx.s3.delayMs = 0;
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(new Set(report.uploaded)).toEqual(new Set(expectedUploads));
    expect(new Set(report.deleted)).toEqual(new Set(expectedDeletes));
    expect(new Set(writes(fx.s3.log).map((r) => r.key))).toEqual(new Set(expectedUploads));
    expect(new Set(await fx.s3.keys())).toEqual(new Set(newObjects.keys()));

    // The observer: at the moment each object began to be written, every document of ours its
    // bytes link to was already readable; deletions began after every write had ended.
    const existing = new Set(oldObjects.keys());
    const problems: string[] = [];
    const ended = new Map(writes(fx.s3.log).map((r) => [r.key, r.ended]));
    for (const write of writes(fx.s3.log)) {
      const object = newObjects.get(write.key)!;
      if (object.encoding !== undefined) continue;
      const text = after.get(object.file)!.toString('utf8');
      for (const url of text.match(/https:\/\/videos\.example\.org\/[^"<\s]*/g) ?? []) {
        const key = `videos/${decodeURIComponent(new URL(url).pathname.slice(1))}`;
        if (!newObjects.has(key)) continue;
        // A video's oEmbed forms name its page, by default the HTML form beside them: documents of
        // one owner go up in the same step, and no reader reaches them before a feed lists them.
        if (sameOwner(write.key, key)) continue;
        const readable = (existing.has(key) && !expectedDeletes.includes(key)) || (ended.get(key) ?? Infinity) < write.started;
        if (!readable) problems.push(`${write.key} links to ${key} before it is there`);
      }
    }
    expect(problems).toEqual([]);
    const lastWrite = Math.max(...writes(fx.s3.log).map((r) => r.ended));
    expect(deletes(fx.s3.log).length).toBeGreaterThan(0);
    for (const d of deletes(fx.s3.log)) expect(d.started).toBeGreaterThan(lastWrite);
    const sitemapWrite = writes(fx.s3.log).find((r) => r.key === 'videos/sitemap.xml');
    const robotsWrite = writes(fx.s3.log).find((r) => r.key === 'videos/robots.txt');
    if (sitemapWrite !== undefined && robotsWrite !== undefined) expect(robotsWrite.started).toBeGreaterThan(sitemapWrite.ended);
  });

  it('deploys a part of a sharded build without touching the objects of the other part', async () => {
    const parts = [1, 2].map((k) => join(fx.dir, `part-${k}`));
    for (const [i, dir] of parts.entries()) {
      const built = cli(['build', '--db', fx.site.file, '--out', dir, '--config', fx.config, '--shard', `${i + 1}/2`]);
      expect(built.code, built.stderr).toBe(0);
    }
    fx.s3.log.length = 0;
    const counted: number[] = [];
    for (const [i, dir] of parts.entries()) {
      const dry = await runCli(['deploy', '--out', dir, '--to', `s3://${BUCKET}/videos`, '--endpoint', fx.s3.endpoint, '--config', fx.config, '--shard', `${i + 1}/2`, '--dry-run', '--json', '--no-notify'], { cwd: fx.dir });
      expect(dry.code, dry.stderr).toBe(0);
      const report = JSON.parse(dry.stdout);
      // The whole site is in the store already: each part finds its own objects there, and
      // deletes none of the other part's, nor (part 2) the site files.
      // Part 1 renders the site files again: the sitemap's lastmod dates are that build's, so its
      // sitemap (and nothing else) differs from the whole site's.
      expect(report.counts, `part ${i + 1}`).toMatchObject({ deleted: 0 });
      expect((report.uploaded as string[]).filter((key) => !/^videos\/sitemap[^/]*\.xml(\.gz|\.br)?$/.test(key)), `part ${i + 1}`).toEqual([]);
      counted.push(report.counts.objects as number);
    }
    expect(writes(fx.s3.log)).toEqual([]);
    expect(counted[0]! + counted[1]!).toBe(expectedObjects(manifest(), 'videos').size);
    expect(counted.every((c) => c > 0)).toBe(true);
  });

  it('resumes an interrupted deploy, writing only what the store does not have', async () => {
    fx.s3.log.length = 0;
    fx.s3.holdPutsAfter(25);
    const first = deploy('resumed', ['--concurrency', '4'], whenReady(() => fx.s3.heldCount() > 0 && writes(fx.s3.log).length === 25, (child) => child.kill('SIGKILL')));
    const killed = await first;
    expect(killed.code).not.toBe(0);
    fx.s3.discardHeld();
    const done = new Set(writes(fx.s3.log).map((r) => r.key));
    expect(done.size).toBe(25);

    fx.s3.log.length = 0;
    const result = await deploy('resumed');
    expect(result.code, result.stderr).toBe(0);
    const again = writes(fx.s3.log).map((r) => r.key);
    const expected = expectedObjects(manifest(), 'resumed');
    expect(again.filter((key) => done.has(key))).toEqual([]);
    expect(new Set([...again, ...done])).toEqual(new Set(expected.keys()));
    expect(new Set(await fx.s3.keys()).size).toBeGreaterThanOrEqual(expected.size);
  });

  it('retries a throttled write, and names every object it could not write without going on to what links to it', async () => {
    const files = manifest();
    const objects = expectedObjects(files, 'faulty');
    const throttled = [...objects.keys()].find((k) => k.endsWith('/rss/'))!;
    const broken = [...objects.keys()].find((k) => k.endsWith('/oembed/xml'))!;
    fx.s3.failPuts(throttled, 2, 503);
    fx.s3.failPuts(broken, Infinity, 500);
    fx.s3.log.length = 0;
    const result = await deploy('faulty', ['--tries', '3']);
    fx.s3.failPuts(broken, 0, 500);
    // A server error on every try: the store's to get over, so try again later.
    expect(result.code).toBe(75);
    expect(fx.s3.log.filter((r) => r.method === 'PUT' && r.key === broken).map((r) => r.status)).toEqual([500, 500, 500]);
    const throttledTries = fx.s3.log.filter((r) => r.method === 'PUT' && r.key === throttled).map((r) => r.status);
    // Attempted before the deploy halted, it got its tries; after, it was not sent at all.
    expect([[503, 503, 200], []]).toContainEqual(throttledTries);
    expect(result.stderr).toContain(`vidfeeds: not written: ${broken}: InternalError: injected by the test (HTTP 500), after 3 tries`);
    // The site files come after every document: none was attempted, and all are counted in one line.
    const report = JSON.parse(result.stdout);
    expect(report.notAttempted).toContain('faulty/sitemap.xml');
    expect(report.notAttempted).toContain('faulty/robots.txt');
    expect(result.stderr).toContain(`vidfeeds: not attempted: ${report.notAttempted.length} objects (a request failed`);
    expect(fx.s3.log.some((r) => r.key === 'faulty/sitemap.xml')).toBe(false);

    const retry = await deploy('faulty');
    expect(retry.code, retry.stderr).toBe(0);
    expect(new Set(await fx.s3.keys()).has('faulty/sitemap.xml')).toBe(true);
  });

  it('refuses a bad target before touching anything', async () => {
    const result = await runCli(['deploy', '--out', fx.out, '--to', 'http://bucket/x', '--endpoint', fx.s3.endpoint, '--config', fx.config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--to: "http://bucket/x" is not s3://BUCKET or s3://BUCKET/PREFIX');
    const missing = await runCli(['deploy', '--out', fx.out, '--to', 's3://no-such-bucket/x', '--endpoint', fx.s3.endpoint, '--config', fx.config]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('s3://no-such-bucket/x/');
  });
});

/** Whether two keys are documents of one user or video (`videos/<owner>/...`). */
function sameOwner(a: string, b: string): boolean {
  const owner = (key: string) => key.split('/').slice(0, 2).join('/');
  return a.split('/').length > 2 && b.split('/').length > 2 && owner(a) === owner(b);
}
