import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { indexNowUrls, startReceiver, websubFeeds, type Receiver } from '../helpers/receiver.js';
import { BUCKET, killWhenHeld, runCli, startLocalS3, whenReady, type LocalS3 } from '../helpers/s3.js';
import { createDemoDb } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';
import { schemaChecked } from '../helpers/report-schema.js';
import { owedIn } from '../helpers/owed-store.js';
import { byCodePoint } from '../../src/db/by-code-point.js';

/**
 * What a deploy owes hubs, IndexNow and the `--on-change` command is recorded before its first
 * write and cleared only once delivered: a deploy killed after writing, or a hub that is down,
 * leaves it recorded, and the next deploy sends it, although it finds those objects unchanged.
 * A local receiver stands in for the hub and IndexNow and checks each request's form; s3rver for
 * the store.
 */

const BASE = 'https://videos.example.org';
const KEY = '3f9c2a7e-5b1d-4c8e-9a6f-0d2e4b7c1a95';
const IDENTITY = { host: 'videos.example.org', key: KEY, keyLocation: `${BASE}/indexnow-key.txt` };

let s3: LocalS3;
let receiver: Receiver;
let work: { dir: string; cleanup: () => void };
let site: ReturnType<typeof createDemoDb>;
let config: string;
let out: string;
let hookFile: string;

beforeAll(async () => {
  s3 = await startLocalS3();
  receiver = await startReceiver();
  work = tempDir('vidfeeds-owed-');
  site = createDemoDb({ users: 4, seed: 9 });
  out = join(work.dir, 'out');
  hookFile = join(work.dir, 'purged.txt');
  config = join(work.dir, 'vidfeeds.config.json');
  writeFileSync(config, JSON.stringify({ baseUrl: BASE, notifyAfter: 'deploy', websub: { hubs: [`${receiver.url}/hub`] }, indexNow: { key: KEY, endpoint: `${receiver.url}/indexnow` } }));
  expect(cli(['build', '--db', site.file, '--out', out, '--config', config]).code).toBe(0);
});

afterAll(async () => {
  await s3?.close();
  await receiver?.close();
  site?.cleanup();
  work?.cleanup();
});

function deploy(prefix: string, onStart?: (child: ChildProcess) => void) {
  return runCli(['deploy', '--out', out, '--to', `s3://${BUCKET}/${prefix}`, '--endpoint', s3.endpoint, '--config', config, '--json', '--concurrency', '2', '--on-change', `cat >> ${hookFile}`], {
    cwd: work.dir,
    onStart,
  }).then(schemaChecked);
}

/** Every document of the tree by the manifest, in code-point order. */
function treeFiles(): string[] {
  return (JSON.parse(cli(['hosting', 'manifest', '--root', out, '--config', config]).stdout) as { files: Array<{ file: string }> }).files.map((f) => f.file).sort(byCodePoint);
}

/** The public URL of a file of the tree, as the URL table gives it (a directory index by its folder). */
function urlOf(file: string): string {
  const parts = file.split('/');
  if (parts.length === 1) return `${BASE}/${file}`;
  // An archive page: <user>/<feed>/archive/<N>/page.<ext>.
  if (parts.length === 5) return `${BASE}/${encodeURIComponent(parts[0]!)}/${parts.slice(1, 4).join('/')}/`;
  return `${BASE}/${encodeURIComponent(parts[0]!)}/${parts[1]}/${parts[2]!.startsWith('index.') ? '' : parts[2]!}`;
}

const isFeed = (file: string) => /\/(rss|atom)\/index\.(rss|atom)$/.test(file);

/** Every document of the tree: its feeds (RSS and Atom) and the URLs of its documents. */
function treeUrls(): { feeds: string[]; documents: string[] } {
  const files = treeFiles();
  return { feeds: files.filter(isFeed).map(urlOf).sort(), documents: files.filter((f) => f.includes('/')).map(urlOf).sort() };
}

const heard = () => ({
  feeds: [...new Set(receiver.received.filter((r) => r.path === '/hub').flatMap(websubFeeds))].sort(),
  indexed: [...new Set(receiver.received.filter((r) => r.path === '/indexnow').flatMap((r) => indexNowUrls(r, IDENTITY)))].sort(),
});

describe('notifications owed until delivered', () => {
  it('a deploy killed after writing leaves them recorded, and the next deploy sends them all', async () => {
    receiver.received.length = 0;
    writeFileSync(hookFile, '');
    s3.holdPutsAfter(40);
    const killed = await deploy('killed', killWhenHeld(s3));
    s3.discardHeld();
    expect(killed.code).not.toBe(0);
    expect(receiver.received).toEqual([]);
    // Recorded beside the deploy record, each listener owed what it hears of.
    const owed = owedIn(join(work.dir, '.vidfeeds', 'out.deploy.owed.sqlite'));
    expect([...owed.keys()].sort()).toEqual([`indexnow ${receiver.url}/indexnow`, 'on-change', `websub ${receiver.url}/hub`]);
    const tree = treeFiles();
    expect(owed.get(`websub ${receiver.url}/hub`)).toEqual(tree.filter(isFeed));
    expect(owed.get('on-change')).toEqual(tree);

    const again = await deploy('killed');
    expect(again.code, again.stderr).toBe(0);
    const report = JSON.parse(again.stdout);
    // The second run found the first run's 40 objects in the store, and wrote only the rest…
    expect(report.counts.unchanged).toBeGreaterThanOrEqual(40);
    // …and yet every feed and document of the tree was announced: what the killed run wrote too.
    const urls = treeUrls();
    expect(heard().feeds).toEqual(urls.feeds);
    expect(heard().indexed).toEqual(urls.documents);
    const purged = new Set(readFileSync(hookFile, 'utf8').split('\n').filter((l) => l !== ''));
    for (const url of urls.documents) expect(purged.has(url), url).toBe(true);
    expect(report.notificationsOwed).toBe(0);
  });

  it('a hub that is down keeps them recorded: a later deploy with nothing to write sends them', async () => {
    receiver.received.length = 0;
    receiver.answer('/hub', [400]);
    const first = await deploy('hub-down');
    expect(first.code).toBe(1);
    expect(first.stderr).toContain('still owed to hubs, IndexNow or --on-change');
    expect(JSON.parse(first.stdout).notificationsOwed).toBeGreaterThanOrEqual(treeUrls().feeds.length);
    // IndexNow heard of them; it is not told twice.
    const indexedOnce = heard().indexed;
    expect(indexedOnce).toEqual(treeUrls().documents);

    receiver.received.length = 0;
    const second = await deploy('hub-down');
    expect(second.code, second.stderr).toBe(0);
    const report = JSON.parse(second.stdout);
    expect(report.counts.uploaded).toBe(0);
    expect(heard().feeds).toEqual(treeUrls().feeds);
    expect(heard().indexed).toEqual([]);
    expect(report.notificationsOwed).toBe(0);

    // Delivered: a third deploy tells no one.
    receiver.received.length = 0;
    const third = await deploy('hub-down');
    expect(third.code, third.stderr).toBe(0);
    expect(receiver.received).toEqual([]);
  });

  it('a signal while a hub is being told stops the deploy at once, and what it owed stays owed for the next', async () => {
    receiver.received.length = 0;
    receiver.answer('/hub', [0]);
    const toldHub = () => receiver.received.some((r) => r.path === '/hub');
    const stopped = await deploy('hub-hangs', whenReady(toldHub, (child) => child.kill('SIGTERM')));
    expect(stopped.code, stopped.stderr).toBe(143);
    const report = JSON.parse(stopped.stdout);
    expect(report).toMatchObject({ command: 'deploy', ok: false, exitCode: 143 });
    expect(report.counts.uploaded).toBeGreaterThan(0);
    expect(report.notificationsOwed).toBeGreaterThanOrEqual(treeUrls().feeds.length);

    receiver.received.length = 0;
    const next = await deploy('hub-hangs');
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout).counts.uploaded).toBe(0);
    expect(heard().feeds).toEqual(treeUrls().feeds);
    expect(JSON.parse(next.stdout).notificationsOwed).toBe(0);
  });

  it('a record of an earlier vidfeeds, which kept what it owed in its JSON, loses none of it: the next deploy sends it', async () => {
    const first = await deploy('upgraded');
    expect(first.code, first.stderr).toBe(0);
    const recordFile = join(work.dir, '.vidfeeds', 'out.deploy.json');
    const record = JSON.parse(readFileSync(recordFile, 'utf8'));
    const target = Object.keys(record.targets).find((t) => t.endsWith('/upgraded/'))!;
    const feeds = treeFiles().filter(isFeed).slice(0, 3);
    // As an earlier vidfeeds wrote it: per target, per listener, the files changed and removed.
    record.owed = {
      [target]: {
        [`websub ${receiver.url}/hub`]: { changed: feeds, removed: [] },
        [`indexnow ${receiver.url}/indexnow`]: { changed: [], removed: ['zz-gone/rss/index.rss'] },
      },
    };
    writeFileSync(recordFile, JSON.stringify(record, null, 2));

    receiver.received.length = 0;
    const next = await deploy('upgraded');
    expect(next.code, next.stderr).toBe(0);
    const report = JSON.parse(next.stdout);
    expect(report.counts.uploaded).toBe(0);
    expect(heard().feeds).toEqual(feeds.map(urlOf).sort());
    expect(heard().indexed).toEqual([`${BASE}/zz-gone/rss/`]);
    expect(report.notificationsOwed).toBe(0);
    expect(JSON.parse(readFileSync(recordFile, 'utf8'))).toEqual({ version: 1, targets: record.targets });
  });
});
