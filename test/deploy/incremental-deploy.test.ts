import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import type { ChildProcess } from 'node:child_process';
import { existsSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { cli, readTree } from '../helpers/cli.js';
import { BUCKET, killWhenHeld, runCli, whenReady, type LoggedRequest } from '../helpers/s3.js';
import { insertVideo } from '../helpers/site-fixture.js';
import { useDeployFixture } from '../helpers/deploy-fixture.js';

/**
 * An incremental deploy: when the target's deploy record names the build state it last published,
 * the deploy sends exactly what the builds since changed, without listing the store or reading an
 * unchanged file; when the record cannot be trusted, it compares everything and says why. After
 * each, the store is compared with the tree object by object (s3rver read back through the SDK).
 */

const BASE = 'https://videos.example.org';

const fx = useDeployFixture('vidfeeds-incremental-deploy-', { users: 4, seed: 21 }, configOf('public, max-age=900'));

function configOf(feedCache: string): Record<string, unknown> {
  return { baseUrl: BASE, compress: ['gzip'], notifyAfter: 'deploy', cacheControl: { formats: { rss: feedCache } } };
}

function build(extra: string[] = []): void {
  const result = cli(['build', '--db', fx.site.file, '--out', fx.out, '--config', fx.config, ...extra]);
  expect(result.code, result.stderr).toBe(0);
}

async function deploy(extra: string[] = [], onStart?: (child: ChildProcess) => void) {
  const result = await runCli(['deploy', '--out', fx.out, '--to', `s3://${BUCKET}/site`, '--endpoint', fx.s3.endpoint, '--config', fx.config, '--no-notify', '--json', ...extra], { cwd: fx.dir, onStart });
  return { ...result, report: result.stdout === '' ? null : JSON.parse(result.stdout) };
}

/** Every object the tree's manifest asks for under `site/`, with the file whose bytes it holds. */
function expectedObjects(): Map<string, string> {
  const files = (JSON.parse(cli(['hosting', 'manifest', '--root', fx.out, '--config', fx.config]).stdout) as { files: Array<{ file: string; keys: string[]; compressed: Array<{ file: string }> }> }).files;
  const objects = new Map<string, string>();
  for (const f of files) {
    for (const key of f.keys) {
      objects.set(`site/${key}`, f.file);
      for (const form of f.compressed) objects.set(`site/${key}.gz`, form.file);
    }
  }
  return objects;
}

/** The store holds exactly the tree's objects, each with the tree's bytes. */
async function expectStoreEqualsTree(): Promise<void> {
  const expected = expectedObjects();
  expect(new Set(await fx.s3.keys())).toEqual(new Set(expected.keys()));
  const tree = readTree(fx.out);
  for (const [key, file] of expected) expect((await fx.s3.get(key)).body.equals(tree.get(file)!), key).toBe(true);
}

const listings = (log: readonly LoggedRequest[]) => log.filter((r) => r.method === 'GET' && r.key === '');
const writes = (log: readonly LoggedRequest[]) => log.filter((r) => r.method === 'PUT' && r.status === 200).map((r) => r.key);

function editTitle(title: string, offset = 0): void {
  const row = fx.site.db.prepare(`SELECT public_id FROM videos WHERE visibility = 'public' ORDER BY id LIMIT 1 OFFSET ?`).get(offset) as { public_id: string };
  fx.site.db.prepare('UPDATE videos SET title = ? WHERE public_id = ?').run(title, row.public_id);
}

describe('an incremental deploy', () => {
  it('the first deploy compares everything and says why', async () => {
    const first = await deploy();
    expect(first.code, first.stderr).toBe(0);
    expect(first.report).toMatchObject({ mode: 'full', reason: 'no deploy of this build state to this target is recorded' });
    await expectStoreEqualsTree();
  });

  it('after a build that changed nothing, sends no request at all', async () => {
    build();
    fx.s3.log.length = 0;
    const result = await deploy();
    expect(result.code, result.stderr).toBe(0);
    expect(result.report).toMatchObject({ mode: 'incremental', counts: { uploaded: 0, deleted: 0, objects: 0 } });
    expect(fx.s3.log).toEqual([]);
    // The same endpoint spelt with a trailing slash is the same target.
    const slashed = await deploy(['--endpoint', `${fx.s3.endpoint}/`]);
    expect(slashed.code, slashed.stderr).toBe(0);
    expect(slashed.report).toMatchObject({ mode: 'incremental', counts: { objects: 0 } });
    expect(fx.s3.log).toEqual([]);
  });

  it('after edits over several builds, writes exactly the changed objects and deletes the removed ones, without listing', async () => {
    const before = readTree(fx.out);
    const oldObjects = expectedObjects();
    editTitle('First edit of two builds');
    build();
    editTitle('Second edit of two builds', 1);
    const hidden = fx.site.db.prepare(`SELECT public_id FROM videos WHERE visibility = 'public' ORDER BY id LIMIT 1 OFFSET 5`).get() as { public_id: string };
    fx.site.db.prepare(`UPDATE videos SET visibility = 'private' WHERE public_id = ?`).run(hidden.public_id);
    const uploader = fx.site.db.prepare(`SELECT user_id AS id FROM videos ORDER BY id LIMIT 1`).get() as { id: number };
    insertVideo(fx.site.db, uploader.id, { public_id: 'incr0new1', title: 'A new video' });
    build();
    const after = readTree(fx.out);
    const changedFiles = new Set([...after].filter(([file, body]) => !before.get(file)?.equals(body)).map(([file]) => file));
    const newObjects = expectedObjects();
    const expectedWrites = [...newObjects].filter(([, file]) => changedFiles.has(file)).map(([key]) => key);
    const expectedDeletes = [...oldObjects.keys()].filter((key) => !newObjects.has(key));
    expect(expectedDeletes.length).toBeGreaterThan(0);

    fx.s3.log.length = 0;
    const result = await deploy();
    expect(result.code, result.stderr).toBe(0);
    expect(result.report.mode).toBe('incremental');
    expect(listings(fx.s3.log)).toEqual([]);
    expect(new Set(writes(fx.s3.log))).toEqual(new Set(expectedWrites));
    expect(new Set(result.report.deleted)).toEqual(new Set(expectedDeletes.filter((k) => result.report.deleted.includes(k))));
    for (const key of expectedDeletes) expect(result.report.deleted, key).toContain(key);
    await expectStoreEqualsTree();
  });

  it('killed with -9 halfway, then run again, ends with the store equal to the tree', async () => {
    for (let i = 0; i < 3; i++) editTitle(`Killed deploy edit ${i}`, i);
    build();
    fx.s3.log.length = 0;
    fx.s3.holdPutsAfter(3);
    const killed = await deploy(['--concurrency', '2'], killWhenHeld(fx.s3));
    fx.s3.discardHeld();
    expect(killed.code).not.toBe(0);
    const again = await deploy();
    expect(again.code, again.stderr).toBe(0);
    expect(again.report.mode).toBe('incremental');
    await expectStoreEqualsTree();
  });

  it('lets a build change the tree while its objects go up, and publishes the tree as the build before it left it', async () => {
    editTitle('Published while a build runs');
    build();
    const published = readTree(fx.out);
    const objects = expectedObjects();
    fx.s3.holdPutsAfter(1);
    let during: ReturnType<typeof cli> | null = null;
    let second: ReturnType<typeof cli> | null = null;
    const deploying = deploy(
      [],
      whenReady(
        () => fx.s3.heldCount() > 0,
        () => {
          // The deploy holds its bytes and waits for the store: a build without --wait gets the lock.
          editTitle('Built while the deploy sends', 1);
          during = cli(['build', '--db', fx.site.file, '--out', fx.out, '--config', fx.config]);
          // A second deploy of the tree would send the newer bytes, and the first's older ones could land after them.
          second = cli(['deploy', '--out', fx.out, '--to', `s3://${BUCKET}/site`, '--endpoint', fx.s3.endpoint, '--config', fx.config, '--no-notify'], { cwd: fx.dir });
          fx.s3.release();
        },
      ),
    );
    const result = await deploying;
    expect(result.code, result.stderr).toBe(0);
    expect(during).not.toBeNull();
    expect(during!.code, during!.stderr).toBe(0);
    expect(second!.code, second!.stderr).toBe(75);
    expect(second!.stderr).toContain('another deploy of this tree is running');
    expect(readTree(fx.out)).not.toEqual(published);
    // Every object holds the bytes of the build before the deploy, none those of the build during it.
    for (const [key, file] of objects) expect((await fx.s3.get(key)).body.equals(published.get(file)!), key).toBe(true);
    const next = await deploy();
    expect(next.code, next.stderr).toBe(0);
    expect(next.report.mode).toBe('incremental');
    await expectStoreEqualsTree();
  });

  it('publishes nothing when a changed document is missing or not as built, and sends it once a build restores it', async () => {
    for (const damage of ['remove', 'edit'] as const) {
      const before = readTree(fx.out);
      editTitle(`Damaged after its build: ${damage}`, 2);
      build();
      const changed = [...readTree(fx.out)].filter(([file, body]) => !before.get(file)?.equals(body)).map(([file]) => file);
      const victim = changed.find((file) => file.includes('oembed'))!;
      expect(victim).toBeDefined();
      if (damage === 'remove') rmSync(join(fx.out, victim));
      else writeFileSync(join(fx.out, victim), '{"edited":"by hand"}');
      fx.s3.log.length = 0;
      const refused = await deploy();
      expect(refused.code, refused.stderr).toBe(2);
      expect(refused.stderr).toContain(damage === 'remove' ? `${victim} is missing` : `${victim} is not what the build wrote`);
      expect(fx.s3.log).toEqual([]);
      // A full build writes it again with the bytes the state records: its change is still the deploy's to send.
      build(['--full']);
      const again = await deploy();
      expect(again.code, again.stderr).toBe(0);
      expect(again.report.mode).toBe('incremental');
      await expectStoreEqualsTree();
    }
  });

  it('hears a signal while it reads a large changed document, and publishes nothing', async () => {
    const before = readTree(fx.out);
    editTitle('Changed before a deploy that is stopped', 3);
    build();
    const victim = [...readTree(fx.out)].find(([file, body]) => file.includes('oembed') && !before.get(file)?.equals(body))![0];
    // A document of 1.5 GB (sparse: no disk), which takes seconds to read and hash, and which the
    // state says is of that size: the deploy must read it whole to know whether it is as built.
    truncateSync(join(fx.out, victim), 1.5 * 2 ** 30);
    const state = new Database(join(dirname(fx.out), '.vidfeeds', `${basename(fx.out)}.state.sqlite`));
    expect(state.prepare('UPDATE outputs SET size = ? WHERE path = ?').run(1.5 * 2 ** 30, victim).changes).toBe(1);
    state.close();
    fx.s3.log.length = 0;
    const lock = join(dirname(fx.out), '.vidfeeds', `${basename(fx.out)}.lock`);
    const stopped = await deploy([], whenReady(() => existsSync(lock), (child) => child.kill('SIGTERM')));
    expect(stopped.code, stopped.stderr).toBe(143);
    expect(stopped.stderr).toMatch(/^vidfeeds: stopped by SIGTERM: deploy to s3:\/\/site\/site\//m);
    expect(stopped.report).toMatchObject({ command: 'deploy', ok: false, exitCode: 143, mode: 'incremental', counts: { uploaded: 0 } });
    expect(fx.s3.log).toEqual([]);
    expect(existsSync(lock)).toBe(false);
    build(['--full']);
    const again = await deploy();
    expect(again.code, again.stderr).toBe(0);
    expect(again.report.mode).toBe('incremental');
    await expectStoreEqualsTree();
  });

  it('falls back to the full compare, saying why, when the record cannot be trusted', async () => {
    const verify = await deploy(['--verify']);
    expect(verify.report).toMatchObject({ mode: 'full', reason: '--verify compares everything', counts: { uploaded: 0, deleted: 0 } });
    expect(verify.stderr).toContain('full compare (--verify compares everything)');

    writeFileSync(fx.config, JSON.stringify(configOf('public, max-age=60')));
    build();
    const reconfigured = await deploy();
    expect(reconfigured.code, reconfigured.stderr).toBe(0);
    expect(reconfigured.report).toMatchObject({ mode: 'full', reason: 'the configuration, the headers or the compressed forms changed since the last deploy' });
    const feedKey = [...expectedObjects()].find(([, f]) => f.endsWith('/rss/index.rss'))![0];
    expect((await fx.s3.get(feedKey)).cacheControl).toBe('public, max-age=60');

    // A build killed halfway leaves the state marked: its files and records may disagree.
    const state = new Database(join(fx.dir, '.vidfeeds', 'out.state.sqlite'));
    state.prepare(`INSERT INTO meta (key, value) VALUES ('in_progress', 'x')`).run();
    state.close();
    const interrupted = await deploy();
    expect(interrupted.report.reason).toBe('a build of the tree was interrupted: its files and its state may disagree');
    build();
    // Such a deploy records no published state: the next one compares everything too.
    expect((await deploy()).report.reason).toBe('no deploy of this build state to this target is recorded');
    expect((await deploy()).report.mode).toBe('incremental');

    // A state made anew (lost, set aside) is another lineage.
    rmSync(join(fx.dir, '.vidfeeds', 'out.state.sqlite'));
    editTitle('After the state was lost', 2);
    build();
    const anew = await deploy();
    expect(anew.report).toMatchObject({ mode: 'full', reason: 'the build state is not the one the last deploy published (set aside, replaced or made anew)' });
    await expectStoreEqualsTree();

    // The same record used for another tree.
    const other = join(fx.dir, 'other');
    expect(cli(['build', '--db', fx.site.file, '--out', other, '--config', fx.config]).code).toBe(0);
    const elsewhere = await runCli(['deploy', '--out', other, '--to', `s3://${BUCKET}/site`, '--endpoint', fx.s3.endpoint, '--config', fx.config, '--no-notify', '--json', '--record', join(fx.dir, '.vidfeeds', 'out.deploy.json')], { cwd: fx.dir });
    expect(JSON.parse(elsewhere.stdout).reason).toBe(`the last deploy to this target published another tree (${fx.out})`);
  });
});
