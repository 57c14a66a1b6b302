import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type * as SiteBuildModule from '../../src/pipeline/site-build.js';
import type * as RenderPoolModule from '../../src/pipeline/render-pool.js';
import type * as IncrementalModule from '../../src/pipeline/incremental.js';
import type * as VersionModule from '../../src/config/version.js';
import type * as RegistryModule from '../../src/formats/registry.js';
import type { DemoShape } from '../../src/db/demo-data.js';
import { createDemoDb, tempDir, testConfig } from '../helpers/site-fixture.js';
import { readTree, treeDifferences } from '../helpers/tree.js';

// Render threads run compiled JavaScript: these tests use dist/ (`npm test` compiles first),
// typed by the sources they were compiled from.
const { buildSite } = (await import('../../dist/pipeline/site-build.js' as string)) as typeof SiteBuildModule;
const { RenderPool } = (await import('../../dist/pipeline/render-pool.js' as string)) as typeof RenderPoolModule;
const { buildFingerprint } = (await import('../../dist/pipeline/incremental.js' as string)) as typeof IncrementalModule;
const { VIDFEEDS_VERSION } = (await import('../../dist/config/version.js' as string)) as typeof VersionModule;
const { FORMATS } = (await import('../../dist/formats/registry.js' as string)) as typeof RegistryModule;

const saved = process.env.VIDFEEDS_RENDER_THREADS;
afterEach(() => {
  if (saved === undefined) delete process.env.VIDFEEDS_RENDER_THREADS;
  else process.env.VIDFEEDS_RENDER_THREADS = saved;
});

/** A full build of `db` into a fresh directory with `threads` render threads: its report and tree. */
function build(db: string, threads: number) {
  process.env.VIDFEEDS_RENDER_THREADS = String(threads);
  const { dir } = tempDir('vidfeeds-render-pool-');
  const out = join(dir, 'out');
  const report = buildSite({ db, out, stateFile: join(dir, 'state.sqlite'), config: testConfig() });
  return { report, tree: readTree(out) };
}

/** One hash of every path and its bytes. */
function treeHash(tree: Map<string, { body: Buffer }>): string {
  const hash = createHash('sha256');
  for (const [path, file] of tree) hash.update(path).update('\0').update(file.body).update('\0');
  return hash.digest('hex');
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
    ['another configuration', 'x', 0, /configHash differs from the build's/],
    ['another snapshot', '', 999_999, /read the change log at \d+, the build at 999999/],
  ])('a thread that would render %s leaves every user to the build thread', (_, configHash, position, reason) => {
    const { file } = createDemoDb({ users: 40, seed: 3 });
    const config = testConfig();
    const real = buildFingerprint(config, FORMATS, VIDFEEDS_VERSION);
    const fingerprint = { ...real, configHash: configHash || real.configHash };
    const pool = new RenderPool({ db: file, config, now: new Date(), fingerprint, threads: 1 });
    try {
      const rows = [...Array(40).keys()].map((i) => ({ id: i + 1, username: `user${i + 1}` }));
      let local = 0;
      const rendered = [...pool.render(rows, ['rss'], new Set(['uploads']), position, () => (local++, [{ body: 'here' }]))];
      expect(rendered.map((user) => user.row.id)).toEqual(rows.map((row) => row.id));
      expect(local).toBe(40);
      expect(pool.refused).toMatch(reason);
      expect(pool.threadsUsed).toBe(0);
    } finally {
      pool.close();
    }
  });

  it('VIDFEEDS_RENDER_THREADS must be a whole number', () => {
    const { file } = createDemoDb({ users: 10, seed: 3 });
    expect(() => build(file, Number.NaN)).toThrow(/VIDFEEDS_RENDER_THREADS must be a whole number from 0 to 64, not "NaN"/);
  });
});
