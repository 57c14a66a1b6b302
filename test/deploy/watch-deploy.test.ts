import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cli } from '../helpers/cli.js';
import { BUCKET, CREDENTIALS, runCli, startLocalS3, type LocalS3 } from '../helpers/s3.js';
import { createDemoDb } from '../helpers/site-fixture.js';
import { cleanUpAfterTest, tempDir } from '../helpers/temp-dir.js';
import { until } from '../helpers/until.js';

/**
 * `vidfeeds watch --deploy`: every change to the database reaches the store, read back by a
 * poller through the SDK (not from the watch's own lines); a store that stops answering delays the
 * change, which arrives once it answers again. Nothing here asserts how long anything took.
 */

let s3: LocalS3;
let work: { dir: string; cleanup: () => void };
let site: ReturnType<typeof createDemoDb>;
let config: string;

beforeAll(async () => {
  s3 = await startLocalS3();
  work = tempDir('vidfeeds-watch-deploy-');
  site = createDemoDb({ users: 3, seed: 17 });
  config = join(work.dir, 'vidfeeds.config.json');
  writeFileSync(config, JSON.stringify({ baseUrl: 'https://videos.example.org', notifyAfter: 'deploy' }));
});

afterAll(async () => {
  await s3?.close();
  site?.cleanup();
  work?.cleanup();
});

/** Polls the store until `key` holds bytes that contain `text`; false past the deadline. */
async function storeShows(key: string, text: string, deadlineMs = 90_000): Promise<boolean> {
  for (const end = Date.now() + deadlineMs; Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
    try {
      if ((await s3.get(key)).body.toString('utf8').includes(text)) return true;
    } catch {
      // Not there yet.
    }
  }
  return false;
}

/**
 * `vidfeeds watch` with these arguments, killed at the end of the test if still running: its
 * process, what it has written to stderr so far, and its exit code once it ends.
 */
function startWatch(args: readonly string[]): { child: ChildProcess; stderr: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [BIN, 'watch', ...args], { cwd: work.dir, env: { ...process.env, ...CREDENTIALS } });
  cleanUpAfterTest(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, stderr: () => stderr, exited };
}

describe('vidfeeds watch --deploy', () => {
  it('publishes each change to the store, and one made while the store is down once it answers again', async () => {
    const out = join(work.dir, 'out');
    const args = ['--db', site.file, '--out', out, '--config', config, '--deploy', `s3://${BUCKET}/live`, '--endpoint', s3.endpoint, '--timeout', '1', '--poll', '200'];
    const { child, stderr, exited } = startWatch(args);

    const video = site.db.prepare(`SELECT public_id FROM videos WHERE visibility = 'public' ORDER BY id LIMIT 1`).get() as { public_id: string };
    const key = `live/${video.public_id}/oembed/json`;
    expect(await storeShows('live/robots.txt', 'Sitemap'), stderr()).toBe(true);

    site.db.prepare('UPDATE videos SET title = ? WHERE public_id = ?').run('Published by watch', video.public_id);
    expect(await storeShows(key, 'Published by watch'), stderr()).toBe(true);

    // The store stops answering writes: the deploy after the next build fails (exit 75)…
    s3.holdPutsAfter(0);
    site.db.prepare('UPDATE videos SET title = ? WHERE public_id = ?').run('Held while the store was down', video.public_id);
    for (let waited = 0; !/deploy failed \(exit code 75\)/.test(stderr()) && waited < 90_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    expect(stderr()).toMatch(/deploy failed \(exit code 75\): the store is behind the tree; trying again in \d+ s/);
    // …and the change arrives once it answers again.
    s3.discardHeld();
    expect(await storeShows(key, 'Held while the store was down'), stderr()).toBe(true);
    // The sitemap's description of the video follows within a second (watch moves sitemap dates
    // and descriptions once a second), and is published by the deploy after that pass.
    expect(await storeShows('live/sitemap.xml', '<video:title>Held while the store was down</video:title>'), stderr()).toBe(true);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    // Nothing is left behind: a full compare finds the store equal to the tree.
    const verify = await runCli(['deploy', '--out', out, '--to', `s3://${BUCKET}/live`, '--endpoint', s3.endpoint, '--config', config, '--verify', '--dry-run', '--json'], { cwd: work.dir });
    expect(verify.code, verify.stderr).toBe(0);
    expect(JSON.parse(verify.stdout).counts).toMatchObject({ uploaded: 0, deleted: 0 });
  });
});

/** The pids of a process's children (from procps's ps). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' }).split('\n').filter((l) => l.trim() !== '').map(Number);
  } catch {
    return []; // ps exits 1 when there are none
  }
}

describe('watch --deploy when its deploy process is killed', () => {
  it('starts another after a kill -9 mid-deploy, which publishes what the killed one had not, and the store ends equal to the tree', async () => {
    const out = join(work.dir, 'out-killed');
    const args = ['--db', site.file, '--out', out, '--config', config, '--deploy', `s3://${BUCKET}/killed`, '--endpoint', s3.endpoint, '--timeout', '5', '--poll', '200'];
    const { child, stderr, exited } = startWatch(args);
    expect(await storeShows('killed/robots.txt', 'Sitemap'), stderr()).toBe(true);

    const videos = site.db.prepare(`SELECT public_id FROM videos WHERE visibility = 'public' ORDER BY id LIMIT 2`).all() as Array<{ public_id: string }>;
    const [first, second] = videos.map((v) => v.public_id);
    // The deploy after this edit is held at its first write, and its process killed there.
    s3.holdPutsAfter(0);
    site.db.prepare('UPDATE videos SET title = ? WHERE public_id = ?').run('Sent when the deploy was killed', first);
    expect(await until(() => s3.heldCount() > 0, 60_000), stderr()).toBe(true);
    const workers = childrenOf(child.pid!);
    expect(workers).toHaveLength(1);
    process.kill(workers[0]!, 'SIGKILL');
    s3.discardHeld();
    expect(await until(() => /deploy failed \(exit code 137\)/.test(stderr()), 30_000), stderr()).toBe(true);

    // Another process takes the next deploy: it carries the killed one's change and a new one.
    site.db.prepare('UPDATE videos SET title = ? WHERE public_id = ?').run('Sent after the kill', second);
    expect(await storeShows(`killed/${first}/oembed/json`, 'Sent when the deploy was killed'), stderr()).toBe(true);
    expect(await storeShows(`killed/${second}/oembed/json`, 'Sent after the kill'), stderr()).toBe(true);
    // The sitemap's descriptions follow with watch's next sitemap pass and the deploy after it.
    for (const title of ['Sent when the deploy was killed', 'Sent after the kill']) {
      expect(await storeShows('killed/sitemap.xml', `<video:title>${title}</video:title>`), stderr()).toBe(true);
    }
    expect(childrenOf(child.pid!)).toHaveLength(1);
    expect(childrenOf(child.pid!)).not.toContain(workers[0]);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const verify = await runCli(['deploy', '--out', out, '--to', `s3://${BUCKET}/killed`, '--endpoint', s3.endpoint, '--config', config, '--verify', '--dry-run', '--json'], { cwd: work.dir });
    expect(verify.code, verify.stderr).toBe(0);
    expect(JSON.parse(verify.stdout).counts).toMatchObject({ uploaded: 0, deleted: 0 });
  });
});

describe('watch --deploy with the build state kept elsewhere', () => {
  it('deploys incrementally from the state its builds keep (--state), not only by full compares', async () => {
    const out = join(work.dir, 'out-state');
    const state = join(work.dir, 'elsewhere', 'site.state.sqlite');
    const args = ['--db', site.file, '--out', out, '--state', state, '--config', config, '--deploy', `s3://${BUCKET}/stated`, '--endpoint', s3.endpoint, '--timeout', '5', '--poll', '200'];
    const { child, stderr, exited } = startWatch(args);
    expect(await storeShows('stated/robots.txt', 'Sitemap'), stderr()).toBe(true);

    const video = site.db.prepare(`SELECT public_id FROM videos WHERE visibility = 'public' ORDER BY id LIMIT 1`).get() as { public_id: string };
    site.db.prepare('UPDATE videos SET title = ? WHERE public_id = ?').run('Sent from the kept state', video.public_id);
    expect(await storeShows(`stated/${video.public_id}/oembed/json`, 'Sent from the kept state'), stderr()).toBe(true);
    // The first deploy to the target compares everything; the one after the edit reads the state.
    // Its line comes when the whole deploy is done, after the object the store already shows.
    const incremental = /deploy to s3:\/\/[^\n]*\/stated\/, incremental \(the builds after build \d+\)/;
    expect(await until(() => incremental.test(stderr()), 60_000), stderr()).toBe(true);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr()).not.toMatch(/MaxListenersExceededWarning/);
  });
});

describe('the deploy setting of the configuration', () => {
  /** Runs watch until `key` is in the store; returns whether it was. */
  async function watchPublishes(configFile: string, flags: string[], key: string): Promise<boolean> {
    const out = join(work.dir, `out-${key.split('/')[0]}`);
    const args = ['--db', site.file, '--out', out, '--config', configFile, '--timeout', '5', '--poll', '200', ...flags];
    const { child, stderr, exited } = startWatch(args);
    const shown = await storeShows(key, 'Sitemap');
    child.kill('SIGTERM');
    expect(await exited, stderr()).toBe(0);
    return shown;
  }

  it('deploys where deploy.to and deploy.endpoint say, and --deploy wins over deploy.to', async () => {
    const configFile = join(work.dir, 'deploying.config.json');
    writeFileSync(configFile, JSON.stringify({ baseUrl: 'https://videos.example.org', deploy: { to: `s3://${BUCKET}/from-config`, endpoint: s3.endpoint } }));
    expect(await watchPublishes(configFile, [], 'from-config/robots.txt')).toBe(true);
    // The flag's target, with the configuration's endpoint.
    expect(await watchPublishes(configFile, ['--deploy', `s3://${BUCKET}/from-flag`], 'from-flag/robots.txt')).toBe(true);
  });

  it('stops watch before any file is written when deploy.to or deploy.endpoint is not one', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ to: `s3://${BUCKET}/a//b` }, /deploy\.to.*s3:\/\/BUCKET or s3:\/\/BUCKET\/PREFIX/],
      [{ to: 'https://bucket/site' }, /deploy\.to/],
      [{ to: `s3://${BUCKET}/site`, endpoint: 'ftp://127.0.0.1/' }, /deploy\.endpoint/],
      [{ bucket: BUCKET }, /deploy\.bucket|deploy: .*bucket/],
    ];
    for (const [setting, message] of cases) {
      const configFile = join(work.dir, 'bad-deploy.config.json');
      writeFileSync(configFile, JSON.stringify({ deploy: setting }));
      const out = join(work.dir, 'out-refused');
      const result = cli(['watch', '--db', site.file, '--out', out, '--config', configFile]);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).toContain(configFile);
      expect(existsSync(out)).toBe(false);
    }
  });
});
