import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readTree } from '../helpers/cli.js';
import { indexNowUrls, startReceiver, websubFeeds, type Receiver } from '../helpers/receiver.js';
import { runCli } from '../helpers/s3.js';
import { createDemoDb, insertVideo } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';
import { NotifyBatcher } from '../../src/deploy/notify-batch.js';

/**
 * After a build, vidfeeds tells the WebSub hubs of exactly the feeds whose bytes changed, IndexNow
 * of exactly the documents that changed or went, and the --on-change command of every changed or
 * removed URL; after a build that changed nothing, no one. A local receiver stands in for the hub
 * and the IndexNow endpoint and checks each request's form.
 */

const BASE = 'https://videos.example.org';
const KEY = '3f9c2a7e-5b1d-4c8e-9a6f-0d2e4b7c1a95';

let receiver: Receiver;
let work: { dir: string; cleanup: () => void };
let site: ReturnType<typeof createDemoDb>;
let config: string;
let out: string;

/** The public URL of a file of the tree, as the URL table gives it (a directory index by its folder). */
function urlOf(file: string): string {
  const parts = file.split('/');
  if (parts.length === 1) return `${BASE}/${file}`;
  // An archive page: <user>/<feed>/archive/<N>/page.<ext>.
  if (parts.length === 5) return `${BASE}/${encodeURIComponent(parts[0]!)}/${parts[1]}/${parts[2]}/${parts[3]}/`;
  const name = parts[2]!.startsWith('index.') ? '' : parts[2]!;
  return `${BASE}/${encodeURIComponent(parts[0]!)}/${parts[1]}/${name}`;
}

function build(extra: string[] = []) {
  return runCli(['build', '--db', site.file, '--out', out, '--config', config, ...extra], { cwd: work.dir });
}

beforeAll(async () => {
  receiver = await startReceiver();
  work = tempDir('vidfeeds-notify-');
  site = createDemoDb({ users: 6, seed: 5 });
  out = join(work.dir, 'out');
  config = join(work.dir, 'vidfeeds.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      baseUrl: BASE,
      websub: { hubs: [`${receiver.url}/hub-a`, `${receiver.url}/hub-b`], feedsPerRequest: 5 },
      indexNow: { key: KEY, endpoint: `${receiver.url}/indexnow` },
    }),
  );
});

afterAll(async () => {
  await receiver?.close();
  site?.cleanup();
  work?.cleanup();
});

describe('announcing what a build changed', () => {
  const identity = { host: 'videos.example.org', key: KEY, keyLocation: `${BASE}/indexnow-key.txt` };

  it('tells every hub of every feed of a first build, in batches, and IndexNow of every document', async () => {
    const result = await build();
    expect(result.code, result.stderr).toBe(0);
    const feeds = [...readTree(out).keys()].filter((f) => /\/(rss|atom)\/index\./.test(f)).map(urlOf);
    for (const hub of ['/hub-a', '/hub-b']) {
      const requests = receiver.received.filter((r) => r.path === hub);
      expect(requests.every((r) => websubFeeds(r).length <= 5)).toBe(true);
      expect(requests.flatMap(websubFeeds).sort()).toEqual(feeds.sort());
    }
    const documents = [...readTree(out).keys()].filter((f) => f.includes('/')).map(urlOf);
    expect(receiver.received.filter((r) => r.path === '/indexnow').flatMap((r) => indexNowUrls(r, identity)).sort()).toEqual(documents.sort());
    expect(readTree(out).get('indexnow-key.txt')?.toString('utf8')).toBe(KEY);
  });

  it('tells no one after a build that changed nothing', async () => {
    receiver.received.length = 0;
    const result = await build();
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.received).toEqual([]);
  });

  it('after a one-video edit, tells exactly the changed feeds and URLs, retrying a busy hub, and hands the hook every changed and removed URL', async () => {
    const before = readTree(out);
    const [edited, hidden] = site.db.prepare(`SELECT public_id FROM videos WHERE visibility = 'public' ORDER BY id LIMIT 2`).all() as Array<{ public_id: string }>;
    site.db.prepare(`UPDATE videos SET title = 'Edited for the hubs' WHERE public_id = ?`).run(edited!.public_id);
    site.db.prepare(`UPDATE videos SET visibility = 'private' WHERE public_id = ?`).run(hidden!.public_id);
    const owner = site.db.prepare(`SELECT user_id AS id FROM videos WHERE public_id = ?`).get(edited!.public_id) as { id: number };
    insertVideo(site.db, owner.id, { public_id: 'fresh1' });
    receiver.received.length = 0;
    receiver.answer('/hub-a', [503]);
    const hookFile = join(work.dir, 'purge.txt');
    const result = await build(['--on-change', `cat > '${hookFile}'`]);
    expect(result.code, result.stderr).toBe(0);
    const after = readTree(out);
    const changed = [...after].filter(([file, body]) => !before.get(file)?.equals(body)).map(([file]) => file);
    const removed = [...before.keys()].filter((file) => !after.has(file));
    expect(removed.length).toBeGreaterThan(0);
    const changedFeeds = changed.filter((f) => /\/(rss|atom)\/index\./.test(f)).map(urlOf).sort();
    expect(changedFeeds.length).toBeGreaterThan(0);
    const hubA = receiver.received.filter((r) => r.path === '/hub-a');
    expect(hubA.length).toBe(2);
    expect(websubFeeds(hubA[0]!)).toEqual(websubFeeds(hubA[1]!));
    expect(hubA.flatMap(websubFeeds).slice(0, changedFeeds.length).sort()).toEqual(changedFeeds);
    expect(receiver.received.filter((r) => r.path === '/hub-b').flatMap(websubFeeds).sort()).toEqual(changedFeeds);
    const indexable = [...changed, ...removed].filter((f) => f.includes('/')).map(urlOf).sort();
    expect(receiver.received.filter((r) => r.path === '/indexnow').flatMap((r) => indexNowUrls(r, identity)).sort()).toEqual(indexable);
    const hooked = readFileSync(hookFile, 'utf8').split('\n');
    expect(hooked.pop()).toBe('');
    expect(hooked.sort()).toEqual([...new Set([...changed, ...removed].map(urlOf))].sort());
  });

  it('names a delivery that keeps failing and exits 1; --no-notify leaves the hubs alone', async () => {
    // The site's newest public video is in its uploader's RSS feed, whatever else it is in.
    const newest = site.db.prepare(`SELECT public_id FROM videos WHERE visibility = 'public' ORDER BY created_at DESC, id DESC LIMIT 1`).get() as { public_id: string };
    site.db.prepare(`UPDATE videos SET title = 'Edited again' WHERE public_id = ?`).run(newest.public_id);
    receiver.answer('/hub-b', [400]);
    receiver.received.length = 0;
    const failed = await build();
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stderr).toMatch(/vidfeeds: not delivered: WebSub publish of \d+ feeds? to http:\/\/127\.0\.0\.1:\d+\/hub-b: HTTP 400/);
    site.db.prepare(`UPDATE videos SET title = 'Edited quietly' WHERE public_id = ?`).run(newest.public_id);
    receiver.received.length = 0;
    const quiet = await build(['--no-notify']);
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(receiver.received).toEqual([]);
  });
});

describe('watch batches its announcements', () => {
  it('sends the changes of a burst of builds as one request per hub', async () => {
    const hub = await startReceiver();
    try {
      // A window far longer than the test: only flush (as watch does when it stops) sends.
      const batcher = new NotifyBatcher({ hubs: [`${hub.url}/hub`], feedsPerRequest: 100, indexNow: null }, 600_000, () => undefined);
      for (let i = 0; i < 5; i++) {
        batcher.add({ changed: [`${BASE}/u${i}/rss/`, `${BASE}/u0/rss/`], removed: [], feeds: [`${BASE}/u${i}/rss/`, `${BASE}/u0/rss/`], indexable: [] });
      }
      expect(hub.received.length).toBe(0);
      await batcher.flush();
      expect(hub.received.length).toBe(1);
      expect(websubFeeds(hub.received[0]!).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `${BASE}/u${i}/rss/`));
      batcher.add({ changed: [], removed: [], feeds: [], indexable: [] });
      await batcher.flush();
      expect(hub.received.length).toBe(1);
    } finally {
      await hub.close();
    }
  });
});

describe('notifications under a signal', () => {
  it('abort the request under way and the hook at once, and send nothing more', async () => {
    const { createServer } = await import('node:http');
    const { notifyChanges } = await import('../../src/deploy/notify.js');
    // A hub that takes the request and never answers.
    const hub = createServer(() => undefined);
    await new Promise<void>((resolve) => hub.listen(0, '127.0.0.1', resolve));
    const { port } = hub.address() as { port: number };
    const stop = new AbortController();
    try {
      const changes = { changed: [`${BASE}/a/rss/`], removed: [], feeds: [`${BASE}/a/rss/`], indexable: [`${BASE}/a/rss/`] };
      const settings = { hubs: [`http://127.0.0.1:${port}/a`, `http://127.0.0.1:${port}/b`], feedsPerRequest: 100, indexNow: null, onChange: 'sleep 30' };
      setTimeout(() => stop.abort(), 300);
      const started = performance.now();
      const deliveries = await notifyChanges(changes, settings, { stop: stop.signal, backoffMs: 10_000 });
      expect(performance.now() - started).toBeLessThan(5_000);
      // The first hub's request was aborted; the second hub and the hook were never started.
      expect(deliveries).toEqual([{ to: `http://127.0.0.1:${port}/a`, what: 'WebSub publish of 1 feed', ok: false, message: 'not sent: stopped by a signal' }]);

      // A hook under way is stopped with the deploy.
      const hookStop = new AbortController();
      setTimeout(() => hookStop.abort(), 300);
      const hooked = await notifyChanges(changes, { ...settings, hubs: [] }, { stop: hookStop.signal });
      expect(hooked).toEqual([{ to: 'sleep 30', what: '--on-change command with 1 URLs', ok: false, message: 'stopped by a signal' }]);
    } finally {
      hub.closeAllConnections();
      hub.close();
    }
  });
});
