import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FORMATS } from '../../src/formats/registry.js';
import { manifestEntries } from '../../src/hosting/manifest.js';
import { routesOf } from '../../src/hosting/routes.js';
import { byCodePoint } from '../../src/db/by-code-point.js';
import { SitePaths } from '../../src/paths/site-paths.js';
import { DeployRecord } from '../../src/deploy/deploy-record.js';
import { deliverOwed, listenersOf, oweChanges, type Listener } from '../../src/deploy/owed-notifications.js';
import { runDeploy } from '../../src/deploy/run-deploy.js';
import { cli, readTree } from '../helpers/cli.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { owedIn } from '../helpers/owed-store.js';
import { indexNowUrls, startReceiver, websubFeeds, type Receiver } from '../helpers/receiver.js';
import { createDemoDb, testConfig } from '../helpers/site-fixture.js';
import { tempDir, useTempDir } from '../helpers/temp-dir.js';

/**
 * A deploy owes each listener what it hears of (a hub the feeds, IndexNow the user and video
 * documents, the `--on-change` command every document), in a database beside the deploy record,
 * and sends it a page at a time, clearing each page the listener heard of: a tree of a few
 * thousand documents, deployed to a store in memory, with pages made small enough that each
 * listener has several. A local receiver stands in for the hub and IndexNow and checks each
 * request's form; the hook is a real shell command. The same requests are sent as one delivery
 * of everything would send, since a page is a whole number of each listener's requests.
 */

const BASE = 'https://videos.example.org';
const KEY = '3f9c2a7e-5b1d-4c8e-9a6f-0d2e4b7c1a95';
const IDENTITY = { host: 'videos.example.org', key: KEY, keyLocation: `${BASE}/indexnow-key.txt` };
const FEEDS_PER_REQUEST = 10;
/** Pages small enough for several each: 3 hub requests a page, an IndexNow request of 1,000 URLs, a hook run of 700. */
const PAGES = { hub: 30, indexNow: 1000, onChange: 700 };
const TARGET = 'memory s3://site/';

const routes = routesOf(FORMATS);
const paths = new SitePaths(BASE, testConfig().pages, FORMATS);
let receiver: Receiver;
let work: { dir: string; cleanup: () => void };
let out: string;
let files: string[];

beforeAll(async () => {
  receiver = await startReceiver();
  work = tempDir('vidfeeds-owed-pages-');
  const site = createDemoDb({ users: 100, seed: 4 });
  out = join(work.dir, 'out');
  const config = join(work.dir, 'vidfeeds.config.json');
  writeFileSync(config, JSON.stringify({ baseUrl: BASE }));
  try {
    expect(cli(['build', '--db', site.file, '--out', out, '--config', config, '--no-notify']).code).toBe(0);
  } finally {
    site.cleanup();
  }
  files = [...readTree(out).keys()].sort(byCodePoint);
});

afterAll(async () => {
  await receiver?.close();
  work?.cleanup();
});

const isFeed = (file: string) => /\/(rss|atom)\/index\.(rss|atom)$/.test(file);
const isIndexable = (file: string) => file.includes('/');

/** The hub, IndexNow and a hook that marks each of its runs in `hookFile`, with small pages. */
function listenersFor(hookFile: string): Listener[] {
  const listeners = listenersOf({
    hubs: [`${receiver.url}/hub`],
    feedsPerRequest: FEEDS_PER_REQUEST,
    indexNow: { key: KEY, endpoint: `${receiver.url}/indexnow`, keyLocation: IDENTITY.keyLocation, host: IDENTITY.host },
    onChange: `{ echo RUN; cat; } >> '${hookFile}'`,
  });
  const pages = [PAGES.hub, PAGES.indexNow, PAGES.onChange];
  return listeners.map((listener, i) => ({ ...listener, pageSize: pages[i]! }));
}

/** A first deploy of the tree to a new store, owing the listeners what it writes. */
async function firstDeploy(record: DeployRecord, listeners: readonly Listener[]): Promise<void> {
  const report = await runDeploy({
    out,
    manifest: { files: manifestEntries(new AbortController().signal, routes, out, '', 'vidfeeds test', () => 'public, max-age=300') },
    routes,
    target: { bucket: 'site', prefix: '' },
    store: new MemoryStore(),
    concurrency: 8,
    dryRun: false,
    record,
    recordId: TARGET,
    beforeWrites: (changed, removed) => oweChanges(record.owed, TARGET, listeners, routes, changed, removed),
  });
  expect(report.failed).toEqual([]);
}

function deliver(record: DeployRecord, listeners: readonly Listener[]) {
  return deliverOwed({ store: record.owed, target: TARGET, listeners, isForgotten: () => true, pending: [], paths, routes, options: { maxTries: 1 } });
}

const hubRequests = () => receiver.received.filter((r) => r.path === '/hub').map(websubFeeds);

describe('what a deploy owes, a page at a time', () => {
  it('pages each listener in whole requests: a hub in feedsPerRequest, IndexNow in its 10,000 URLs', () => {
    for (const feedsPerRequest of [1, 7, 100, 1000]) {
      const [hub, indexNow, hook] = listenersOf({ hubs: ['https://hub.example/'], feedsPerRequest, indexNow: { key: KEY, endpoint: 'https://indexnow.example/', keyLocation: IDENTITY.keyLocation, host: IDENTITY.host }, onChange: 'true' });
      expect(hub!.pageSize % feedsPerRequest).toBe(0);
      expect(hub!.pageSize).toBeGreaterThanOrEqual(10_000);
      expect(hub!.pageSize).toBeLessThan(10_000 + feedsPerRequest);
      expect(indexNow!.pageSize).toBe(10_000);
      expect(hook!.pageSize).toBe(10_000);
    }
  });

  it('owes each listener what it hears of, and sends it in pages of whole requests', async () => {
    const dir = useTempDir('vidfeeds-owed-first-');
    const hookFile = join(dir, 'hook.txt');
    writeFileSync(hookFile, '');
    const listeners = listenersFor(hookFile);
    const record = new DeployRecord(join(dir, 'out.deploy.json'));
    receiver.received.length = 0;
    await firstDeploy(record, listeners);

    const feeds = files.filter(isFeed);
    const indexable = files.filter(isIndexable);
    expect(files.length).toBeGreaterThan(2000);
    expect(feeds.length).toBeGreaterThan(PAGES.hub * 3);
    const owed = owedIn(join(dir, 'out.deploy.owed.sqlite'), TARGET);
    expect(owed.get(`websub ${receiver.url}/hub`)).toEqual(feeds);
    expect(owed.get(`indexnow ${receiver.url}/indexnow`)).toEqual(indexable);
    expect(owed.get('on-change')).toEqual(files);
    expect(record.owed.count(TARGET)).toBe(files.length);
    const owedBytes = statSync(join(dir, 'out.deploy.owed.sqlite')).size;

    const deliveries = await deliver(record, listeners);
    expect(deliveries.filter((d) => !d.ok)).toEqual([]);
    // Every feed once, in requests of at most feedsPerRequest, as many as one delivery of them all would make.
    const published = hubRequests();
    expect(published.flat().sort()).toEqual(feeds.map((f) => paths.urlOfFile(f)).sort());
    expect(published.length).toBe(Math.ceil(feeds.length / FEEDS_PER_REQUEST));
    for (const request of published) expect(request.length).toBeLessThanOrEqual(FEEDS_PER_REQUEST);
    const submissions = receiver.received.filter((r) => r.path === '/indexnow').map((r) => indexNowUrls(r, IDENTITY));
    expect(submissions.map((s) => s.length)).toEqual(chunkSizes(indexable.length, PAGES.indexNow));
    // The hook runs once a page, each run's URLs sorted.
    const runs = readFileSync(hookFile, 'utf8').split('RUN\n').slice(1).map((run) => run.split('\n').filter((l) => l !== ''));
    expect(runs.map((run) => run.length)).toEqual(chunkSizes(files.length, PAGES.onChange));
    for (const run of runs) expect(run).toEqual([...run].sort());
    expect(runs.flat().sort()).toEqual(files.map((f) => paths.urlOfFile(f)).sort());
    expect(record.owed.count(TARGET)).toBe(0);
    // Nothing owed: the pages the rows took are given back.
    expect(statSync(join(dir, 'out.deploy.owed.sqlite')).size).toBeLessThan(owedBytes / 10);
    record.close();
  });

  it('a hub that fails on its second page keeps exactly the pages it was not sent, and the next deploy sends just them', async () => {
    const dir = useTempDir('vidfeeds-owed-failing-');
    const listeners = listenersFor(join(dir, 'hook.txt')).slice(0, 1);
    const record = new DeployRecord(join(dir, 'out.deploy.json'));
    await firstDeploy(record, listeners);
    const feeds = files.filter(isFeed);
    receiver.received.length = 0;
    // The first page's three requests go through; the second page's first is refused.
    receiver.answer('/hub', [202, 202, 202, 400]);
    const failed = await deliver(record, listeners);
    expect(failed.filter((d) => !d.ok)).toHaveLength(1);
    expect(failed).toHaveLength(6);
    const firstPage = feeds.slice(0, PAGES.hub);
    expect(hubRequests().slice(0, 3).flat().sort()).toEqual(firstPage.map((f) => paths.urlOfFile(f)).sort());
    // No later page was tried: the rest stays owed, and nothing of the first page.
    expect(owedIn(join(dir, 'out.deploy.owed.sqlite'), TARGET).get(`websub ${receiver.url}/hub`)).toEqual(feeds.slice(PAGES.hub));

    receiver.received.length = 0;
    const next = await deliver(record, listeners);
    expect(next.every((d) => d.ok)).toBe(true);
    expect(hubRequests().flat().sort()).toEqual(feeds.slice(PAGES.hub).map((f) => paths.urlOfFile(f)).sort());
    expect(record.owed.count(TARGET)).toBe(0);
    record.close();
  });

  it('leaves out documents not yet in the store, and forgets a listener no longer configured', async () => {
    const dir = useTempDir('vidfeeds-owed-pending-');
    const [hub, indexNow] = listenersFor(join(dir, 'hook.txt'));
    const record = new DeployRecord(join(dir, 'out.deploy.json'));
    await firstDeploy(record, [hub!, indexNow!]);
    const feeds = files.filter(isFeed);
    const pending = feeds.filter((_, i) => i % 7 === 0);
    receiver.received.length = 0;
    const sent = await deliverOwed({ store: record.owed, target: TARGET, listeners: [hub!], isForgotten: () => true, pending, paths, routes, options: { maxTries: 1 } });
    expect(sent.every((d) => d.ok)).toBe(true);
    expect(hubRequests().flat().sort()).toEqual(feeds.filter((f) => !pending.includes(f)).map((f) => paths.urlOfFile(f)).sort());
    expect(receiver.received.filter((r) => r.path === '/indexnow')).toEqual([]);
    expect([...owedIn(join(dir, 'out.deploy.owed.sqlite'), TARGET)]).toEqual([[`websub ${receiver.url}/hub`, pending]]);
    record.close();
  });
});

describe('a deploy record of an earlier vidfeeds', () => {
  it('moves what it owes into the owed database on open, and is written without it; moved twice, it is owed once', () => {
    const dir = useTempDir('vidfeeds-owed-record-');
    const file = join(dir, 'out.deploy.json');
    const targets = { [TARGET]: { headers: 'abc', etagsAreMd5: true } };
    const old = {
      version: 1,
      targets,
      owed: {
        [TARGET]: {
          'websub https://hub.example/': { changed: ['alice/atom/index.atom', 'alice/rss/index.rss'], removed: [] },
          'on-change': { changed: ['alice/rss/index.rss'], removed: ['bob/index.html'] },
        },
        'other s3://elsewhere/': { 'on-change': { changed: ['robots.txt'], removed: [] } },
      },
    };
    const expected = [
      ['on-change', ['alice/rss/index.rss', 'bob/index.html']],
      ['websub https://hub.example/', ['alice/atom/index.atom', 'alice/rss/index.rss']],
    ];
    for (let open = 0; open < 2; open++) {
      // The second time as if killed after the move and before the record was written again.
      writeFileSync(file, JSON.stringify(old));
      const record = new DeployRecord(file);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ version: 1, targets });
      expect(record.get(TARGET)).toEqual(targets[TARGET]);
      expect([...record.owed.listeners(TARGET)]).toEqual(['on-change', 'websub https://hub.example/']);
      expect(record.owed.count(TARGET)).toBe(3);
      expect(record.owed.page(TARGET, 'on-change', '', 10)).toEqual([
        { file: 'alice/rss/index.rss', removed: false },
        { file: 'bob/index.html', removed: true },
      ]);
      expect(record.owed.count('other s3://elsewhere/')).toBe(1);
      record.close();
    }
    expect([...owedIn(join(dir, 'out.deploy.owed.sqlite'), TARGET)]).toEqual(expected);
    expect([...owedIn(join(dir, 'out.deploy.owed.sqlite'), 'other s3://elsewhere/')]).toEqual([['on-change', ['robots.txt']]]);
  });
});

/** The sizes of the chunks of `total` items, `size` at a time. */
function chunkSizes(total: number, size: number): number[] {
  return Array.from({ length: Math.ceil(total / size) }, (_, i) => Math.min(size, total - i * size));
}
