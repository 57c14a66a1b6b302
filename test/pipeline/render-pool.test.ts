import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type * as SiteBuildModule from '../../src/pipeline/site-build.js';
import type * as RenderPoolModule from '../../src/pipeline/threads/render-pool.js';
import type * as IncrementalModule from '../../src/pipeline/plan/incremental.js';
import type * as VersionModule from '../../src/config/version.js';
import type * as RegistryModule from '../../src/formats/registry.js';
import type * as WritePoolModule from '../../src/pipeline/threads/write-pool.js';
import type { DemoShape } from '../../src/db/demo-data.js';
import { createDemoDb, tempDir, testConfig } from '../helpers/site-fixture.js';
import { readTree, touchedButSame, treeDifferences } from '../helpers/tree.js';
import type { SiteConfig } from '../../src/config/config.js';
import { ChangeLog } from '../../src/db/change-log.js';
import { SavedState } from '../../src/pipeline/build-state.js';
import { STAGING_DIR } from '../../src/pipeline/write/output-writer.js';
import { compressedFormOf } from '../../src/paths/compression.js';
import { documentHash } from '../../src/pipeline/document-hash.js';

// Render threads run compiled JavaScript: these tests use dist/ (`npm test` compiles first),
// typed by the sources they were compiled from.
const { buildSite } = (await import('../../dist/pipeline/site-build.js' as string)) as typeof SiteBuildModule;
const { RenderPool } = (await import('../../dist/pipeline/threads/render-pool.js' as string)) as typeof RenderPoolModule;
const { buildFingerprint } = (await import('../../dist/pipeline/plan/incremental.js' as string)) as typeof IncrementalModule;
const { VIDFEEDS_VERSION } = (await import('../../dist/config/version.js' as string)) as typeof VersionModule;
const { FORMATS } = (await import('../../dist/formats/registry.js' as string)) as typeof RegistryModule;
const { ThreadedDirectoryWriter } = (await import('../../dist/pipeline/threads/write-pool.js' as string)) as typeof WritePoolModule;

const saved = {
  VIDFEEDS_RENDER_THREADS: process.env.VIDFEEDS_RENDER_THREADS,
  VIDFEEDS_WRITE_THREAD: process.env.VIDFEEDS_WRITE_THREAD,
  VIDFEEDS_WRITE_THREAD_RENDERS: process.env.VIDFEEDS_WRITE_THREAD_RENDERS,
};
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/**
 * A build of `db` with `threads` render threads: into a fresh directory, or again into `into` (a
 * full build over the tree there, which compares every document with it).
 */
function build(db: string, threads: number, options: { config?: SiteConfig; into?: { out: string; stateFile: string }; lend?: '0' | '1' } = {}) {
  process.env.VIDFEEDS_RENDER_THREADS = String(threads);
  // The write thread renders only when told to (see 'the write thread lent to the pool').
  process.env.VIDFEEDS_WRITE_THREAD_RENDERS = options.lend ?? '0';
  const fresh = () => {
    const { dir } = tempDir('vidfeeds-render-pool-');
    return { out: join(dir, 'out'), stateFile: join(dir, 'state.sqlite') };
  };
  const { out, stateFile } = options.into ?? fresh();
  const report = buildSite({ db, out, stateFile, config: options.config ?? testConfig(), full: options.into !== undefined });
  return { report, tree: readTree(out), out, stateFile };
}

/** Files on disk whose bytes the state does not record (a file written and never recorded, or recorded wrong). */
function unrecorded(out: string, stateFile: string): string[] {
  const state = new SavedState(stateFile);
  try {
    const records = new Map([...state.outputs()].map((output) => [output.path, output]));
    const problems: string[] = [];
    for (const [path, file] of readTree(out)) {
      // Compressed forms have no records of their own (their document's hash covers them).
      if (compressedFormOf(path) !== null) continue;
      const record = records.get(path);
      const hash = documentHash(file.body);
      if (record === undefined) problems.push(`not recorded: ${path}`);
      else if (!record.hash.equals(hash) || record.size !== file.body.length) problems.push(`recorded otherwise: ${path}`);
    }
    return problems;
  } finally {
    state.close();
  }
}

/** One hash of every path and its bytes. */
function treeHash(tree: Map<string, { body: Buffer }>): string {
  const hash = createHash('sha256');
  for (const [path, file] of tree) hash.update(path).update('\0').update(file.body).update('\0');
  return hash.digest('hex');
}

/** Begins a read transaction on `db`, as a build does: its change log position and its published users, in the build's order. */
function snapshot(db: Database.Database) {
  db.exec('BEGIN');
  const position = new ChangeLog(db).current().position;
  const users = db.prepare<[], { id: number; username: string }>(`SELECT id, username FROM users WHERE state = 'active' ORDER BY username`).all();
  return { position, users };
}

describe('render threads', () => {
  it.each<[DemoShape, number]>([
    ['demo', 48],
    ['feed-heavy', 24],
  ])('give the same tree as rendering on the build thread (%s site)', (shape, users) => {
    const { file } = createDemoDb({ users, seed: 11, shape });
    const here = build(file, 0);
    const threaded = build(file, 2);
    expect(here.report.renderThreads).toBe(0);
    expect(threaded.report.renderThreads).toBe(2);
    expect(treeDifferences(threaded.tree, here.tree)).toEqual([]);
    expect(treeHash(threaded.tree)).toBe(treeHash(here.tree));
    expect(threaded.report).toMatchObject({ documents: here.report.documents, failedCount: 0, skippedCount: here.report.skippedCount });
    // The demo's hostile names are reported the same way either way.
    expect(threaded.report.skipped).toEqual(here.report.skipped);
    expect(threaded.report.issues).toEqual(here.report.issues);
  });

  it.each([
    ['through a lane of the build\'s write thread', '1'],
    ['themselves, without a write thread', '0'],
  ])('write their users\' files in a build into an empty directory (%s), recorded as the build thread records its own', (_, writeThread) => {
    process.env.VIDFEEDS_WRITE_THREAD = writeThread;
    const { file } = createDemoDb({ users: 40, seed: 5, shape: 'feed-heavy' });
    const config = testConfig({ compress: ['gzip', 'br'] });
    const here = build(file, 0, { config });
    const threaded = build(file, 1, { config });
    expect(threaded.report.renderThreads).toBe(1);
    expect(treeDifferences(threaded.tree, here.tree)).toEqual([]);
    expect([...threaded.tree.keys()].some((path) => path.endsWith('/rss/index.rss.br'))).toBe(true);
    expect(threaded.report).toMatchObject({ documents: here.report.documents, written: here.report.written, bytesWritten: here.report.bytesWritten });
    expect(unrecorded(threaded.out, threaded.stateFile)).toEqual([]);
    // The state knows every file: a build with nothing changed writes nothing.
    const again = build(file, 1, { config, into: threaded });
    expect(again.report).toMatchObject({ mode: 'full', written: 0, removed: 0 });
    expect(touchedButSame(threaded.tree, again.tree)).toEqual([]);
  });

  it('only read and render in a full build over an existing tree, which compares each document with it', () => {
    const { file } = createDemoDb({ users: 40, seed: 6, shape: 'feed-heavy' });
    const first = build(file, 0);
    const edit = new Database(file);
    edit.exec(`UPDATE videos SET title = title || ' (v2)' WHERE id % 3 = 0`);
    edit.close();
    const threaded = build(file, 1, { into: first });
    const reference = build(file, 0);
    expect(threaded.report).toMatchObject({ mode: 'full', renderThreads: 1 });
    expect(treeDifferences(threaded.tree, reference.tree)).toEqual([]);
    expect(threaded.report.written).toBeGreaterThan(0);
    expect(threaded.report.written).toBeLessThan(threaded.report.documents);
    expect(unrecorded(threaded.out, threaded.stateFile)).toEqual([]);
  });

  it.each([
    ['a render thread', '1', '0'],
    ['the write thread lent to the pool', '0', '1'],
  ])('a build stopped by a signal records every file %s wrote, and the next build completes the tree', (_, threads, lend) => {
    const { file } = createDemoDb({ users: 72, seed: 7, shape: 'feed-heavy' });
    process.env.VIDFEEDS_RENDER_THREADS = threads;
    process.env.VIDFEEDS_WRITE_THREAD_RENDERS = lend;
    const { dir } = tempDir('vidfeeds-render-pool-');
    const place = { out: join(dir, 'out'), stateFile: join(dir, 'state.sqlite') };
    let asked = 0;
    let stopped: unknown;
    try {
      buildSite({ db: file, ...place, config: testConfig(), stopRequested: () => (++asked > 50 ? 'SIGINT' : null) });
    } catch (error) {
      stopped = error;
    }
    // buildSite comes from dist/: its BuildInterrupted is not the one of src/.
    expect((stopped as Error).name).toBe('BuildInterrupted');
    const stoppedTree = readTree(place.out);
    expect(stoppedTree.size).toBeGreaterThan(16 * 8);
    expect(unrecorded(place.out, place.stateFile)).toEqual([]);
    // No build finished yet, so the next is full; it finds the stopped one's files recorded and leaves them be.
    const next = buildSite({ db: file, ...place, config: testConfig() });
    expect(next.unchanged).toBeGreaterThanOrEqual(stoppedTree.size);
    process.env.VIDFEEDS_WRITE_THREAD_RENDERS = '0';
    const after = readTree(place.out);
    expect(touchedButSame(stoppedTree, after)).toEqual([]);
    expect(treeDifferences(after, build(file, 0).tree)).toEqual([]);
  });

  it('hand back the users whose files a thread wrote when the build stops taking them', () => {
    const { file } = createDemoDb({ users: 100, seed: 8, shape: 'feed-heavy' });
    const config = testConfig();
    const { dir } = tempDir('vidfeeds-render-pool-');
    const out = join(dir, 'out');
    mkdirSync(join(out, STAGING_DIR), { recursive: true });
    const pool = new RenderPool({ db: file, out, config, now: new Date(), fingerprint: buildFingerprint(config, FORMATS, VIDFEEDS_VERSION), threads: 0, writingThreads: 1, lendWriteThread: 'never' });
    const db = new Database(file, { readonly: true });
    try {
      const { position, users } = snapshot(db);
      const taken: string[] = [];
      const unclaimed: string[] = [];
      const job = {
        formats: ['rss'],
        parts: new Set(['uploads'] as const),
        position,
        local: () => [{ body: 'rendered here, not written' }],
        writes: { compression: [], unclaimed: (user: { row: { username: string } }) => unclaimed.push(user.row.username) },
      };
      expect(() => {
        for (const user of pool.render(users, job)) {
          taken.push(user.row.username);
          if (taken.length === 20) throw new Error('the build stops');
        }
      }).toThrow('the build stops');
      expect(unclaimed.length).toBeGreaterThan(0);
      expect(unclaimed.filter((name) => taken.includes(name))).toEqual([]);
      // Every file on disk is of a user taken or handed back.
      const onDisk = [...readTree(out).keys()].map((path) => path.split('/')[0]!);
      expect(onDisk.length).toBeGreaterThan(0);
      expect(onDisk.filter((name) => !taken.includes(name) && !unclaimed.includes(name))).toEqual([]);
    } finally {
      db.close();
      pool.close();
    }
  });

  it.each([
    ['another configuration', 'x', 0, /configHash differs from the build's/],
    ['another snapshot', '', 999_999, /read the change log at \d+, the build at 999999/],
  ])('a thread that would render %s leaves every user to the build thread', (_, configHash, position, reason) => {
    const { file } = createDemoDb({ users: 40, seed: 3 });
    const config = testConfig();
    const real = buildFingerprint(config, FORMATS, VIDFEEDS_VERSION);
    const fingerprint = { ...real, configHash: configHash || real.configHash };
    const pool = new RenderPool({ db: file, out: tempDir('vidfeeds-render-pool-').dir, config, now: new Date(), fingerprint, threads: 1, writingThreads: 1, lendWriteThread: 'never' });
    try {
      const rows = [...Array(40).keys()].map((i) => ({ id: i + 1, username: `user${i + 1}` }));
      let local = 0;
      const rendered = [...pool.render(rows, { formats: ['rss'], parts: new Set(['uploads']), position, local: () => (local++, [{ body: 'here' }]) })];
      expect(rendered.map((user) => user.row.id)).toEqual(rows.map((row) => row.id));
      expect(local).toBe(40);
      expect(pool.refused).toMatch(reason);
      expect(pool.threadsUsed).toBe(0);
    } finally {
      pool.close();
    }
  });

  it.each([
    ['only renders', 'renders'],
    ['writes its users\' files', 'writes'],
    ['is the write thread lent to the pool', 'lent'],
  ] as const)('a thread that %s and stops mid-build fails the build instead of leaving it waiting for ever', (_, kind) => {
    // Enough users that the thread still has batches to answer when it is stopped after the first:
    // with 80 it had sometimes answered all of its share by then, and the build did not wait.
    const { file } = createDemoDb({ users: 400, seed: 4 });
    const config = testConfig();
    const out = tempDir('vidfeeds-render-pool-').dir;
    mkdirSync(join(out, STAGING_DIR), { recursive: true });
    const writer = kind === 'lent' ? new ThreadedDirectoryWriter(out, { slots: 4, slotBytes: 64 * 1024, batchFiles: 8, stallMs: 300 }) : null;
    const pool = new RenderPool({
      db: file, out, config, now: new Date(), fingerprint: buildFingerprint(config, FORMATS, VIDFEEDS_VERSION), stallMs: 300,
      ...(writer === null ? { threads: 1, writingThreads: 1, lendWriteThread: 'never' } : { threads: 0, writingThreads: 0, lendWriteThread: 'always' }),
    });
    const lending = writer === null ? {} : { lendThread: (data: Parameters<typeof writer.lendThread>[0]) => writer.lendThread(data), spareTime: () => null };
    // Stopped without yielding to the event loop, as a build never does: only its silence tells.
    const stop = () =>
      writer === null
        ? (pool as unknown as { workers: Array<{ end(): void }> }).workers[0]!.end()
        : void (writer as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    const db = new Database(file, { readonly: true });
    try {
      const { position, users: rows } = snapshot(db);
      const job = {
        formats: ['rss'],
        parts: new Set(['uploads'] as const),
        position,
        local: () => [{ body: 'here' }],
        ...(kind === 'renders' ? {} : { writes: { compression: [], unclaimed: () => {}, ...lending } }),
      };
      let taken = 0;
      expect(() => {
        for (const _ of pool.render(rows, job)) if (++taken === 1) stop();
      }).toThrow(/a render thread has answered nothing for 0\.3 s/);
      expect(pool.threadsUsed).toBe(1);
      expect(taken).toBeLessThan(rows.length);
    } finally {
      db.close();
      pool.close();
      // Nothing was sent to the write thread: the documents rendered here were never written.
      writer?.close();
    }
  });

  it('VIDFEEDS_RENDER_THREADS must be a whole number', () => {
    const { file } = createDemoDb({ users: 10, seed: 3 });
    expect(() => build(file, Number.NaN)).toThrow(/VIDFEEDS_RENDER_THREADS must be a whole number from 0 to 64, not "NaN"/);
  });
});

describe('the write thread lent to the render pool', () => {
  it('renders and writes its users\' files between its batches: the same tree, every file recorded', () => {
    process.env.VIDFEEDS_WRITE_THREAD = '1';
    const { file } = createDemoDb({ users: 48, seed: 9, shape: 'feed-heavy' });
    const config = testConfig({ compress: ['gzip'] });
    const here = build(file, 0, { config });
    const lent = build(file, 0, { config, lend: '1' });
    expect(here.report.renderThreads).toBe(0);
    expect(lent.report.renderThreads).toBe(1);
    expect(treeDifferences(lent.tree, here.tree)).toEqual([]);
    expect(treeHash(lent.tree)).toBe(treeHash(here.tree));
    expect(lent.report).toMatchObject({ documents: here.report.documents, written: here.report.written, bytesWritten: here.report.bytesWritten });
    expect(lent.report.issues).toEqual(here.report.issues);
    expect(unrecorded(lent.out, lent.stateFile)).toEqual([]);
    const again = build(file, 0, { config, into: lent, lend: '1' });
    expect(again.report).toMatchObject({ mode: 'full', written: 0, removed: 0 });
    expect(touchedButSame(lent.tree, again.tree)).toEqual([]);
  });

  it('is not lent where it has nothing to spare for: a build over an existing tree, a build without a write thread, a small build', () => {
    const { file } = createDemoDb({ users: 40, seed: 10, shape: 'feed-heavy' });
    process.env.VIDFEEDS_WRITE_THREAD = '1';
    const first = build(file, 0, { lend: '1' });
    expect(first.report.renderThreads).toBe(1);
    // Comparing with what is there: documents come back to the build thread, no thread writes.
    expect(build(file, 0, { into: first, lend: '1' }).report.renderThreads).toBe(0);
    process.env.VIDFEEDS_WRITE_THREAD = '0';
    expect(build(file, 0, { lend: '1' }).report.renderThreads).toBe(0);
    // By default it is lent once it has shown time to spare over 300 ms of writing, which a
    // build of a few hundred files never gives it: its write thread never starts (watch's builds).
    process.env.VIDFEEDS_WRITE_THREAD = '1';
    process.env.VIDFEEDS_RENDER_THREADS = '0';
    delete process.env.VIDFEEDS_WRITE_THREAD_RENDERS;
    const small = createDemoDb({ users: 10, seed: 10 });
    const { dir } = tempDir('vidfeeds-render-pool-');
    const report = buildSite({ db: small.file, out: join(dir, 'out'), stateFile: join(dir, 'state.sqlite'), config: testConfig() });
    expect(report.renderThreads).toBe(0);
  });

  it.each([
    ['is lent once it shows time to spare, asked again at each user: a slow start does not keep it from the build', [null, null, 0.1, 0.1, 0.1, 0.9], 1],
    ['is not lent when it never shows time to spare, and says so', [null, 0.1], 0],
  ] as const)('%s', (_, shares, threads) => {
    const { file } = createDemoDb({ users: 120, seed: 12, shape: 'feed-heavy' });
    const config = testConfig();
    const out = tempDir('vidfeeds-render-pool-').dir;
    mkdirSync(join(out, STAGING_DIR), { recursive: true });
    const writer = new ThreadedDirectoryWriter(out);
    const pool = new RenderPool({
      db: file, out, config, now: new Date(), fingerprint: buildFingerprint(config, FORMATS, VIDFEEDS_VERSION),
      threads: 0, writingThreads: 0, lendWriteThread: 'spare',
    });
    const db = new Database(file, { readonly: true });
    try {
      const { position, users: rows } = snapshot(db);
      // The thread's share of time with nothing to write, as the writer would tell it: unknown at
      // first (null), then low, then (in the first case) high.
      let asked = 0;
      const spareTime = () => shares[Math.min(asked++, shares.length - 1)]!;
      let local = 0;
      const job = {
        formats: ['rss'],
        parts: new Set(['uploads'] as const),
        position,
        local: () => (local++, [{ body: 'here' }]),
        writes: { compression: [], unclaimed: () => {}, lendThread: (data: Parameters<typeof writer.lendThread>[0]) => writer.lendThread(data), spareTime },
      };
      const rendered = [...pool.render(rows, job)];
      expect(rendered.map((user) => user.row.id)).toEqual(rows.map((row) => row.id));
      expect(pool.threadsUsed).toBe(threads);
      if (threads === 0) {
        expect(local).toBe(rows.length);
        expect(pool.refused).toMatch(/no time to spare/);
      } else {
        // The users before the share reached LEND_SPARE were rendered here; the thread took some of the rest.
        expect(local).toBeGreaterThanOrEqual(shares.length - 1);
        expect(local).toBeLessThan(rows.length);
      }
    } finally {
      db.close();
      pool.close();
      writer.close();
    }
  });

  it('VIDFEEDS_WRITE_THREAD_RENDERS must be 0 or 1', () => {
    const { file } = createDemoDb({ users: 10, seed: 3 });
    process.env.VIDFEEDS_WRITE_THREAD_RENDERS = 'yes';
    process.env.VIDFEEDS_RENDER_THREADS = '0';
    const { dir } = tempDir('vidfeeds-render-pool-');
    expect(() => buildSite({ db: file, out: join(dir, 'out'), stateFile: join(dir, 'state.sqlite'), config: testConfig() })).toThrow(
      /VIDFEEDS_WRITE_THREAD_RENDERS must be 0 or 1, not "yes"/,
    );
  });
});
