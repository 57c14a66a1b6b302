import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { BuildState } from '../../src/pipeline/build-state.js';
import type { BuildReporter } from '../../src/pipeline/build-report.js';
import { runBuild } from '../../src/pipeline/run-build.js';
import { buildFingerprint } from '../../src/pipeline/plan/incremental.js';
import { BuildInterrupted } from '../../src/pipeline/interrupt.js';
import { MemoryWriter } from '../../src/pipeline/write/output-writer.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { VIDFEEDS_VERSION } from '../../src/config/version.js';
import { ChangeLog } from '../../src/db/change-log.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { FORMATS } from '../../src/formats/registry.js';
import { buildInMemory, createDemoDb, testConfig } from '../helpers/site-fixture.js';

/**
 * A build asked to stop (SIGINT/SIGTERM, src/pipeline/interrupt.ts) in memory: it stops between
 * owners, keeps what it wrote recorded and the old basis, so the next build is incremental and
 * rewrites nothing the stopped one already wrote.
 */
describe('a build asked to stop', () => {
  it('stops between owners, records what it wrote, and the next build goes on incrementally to the bytes of a full build', () => {
    const { file } = createDemoDb({ users: 30, seed: 3 });
    const config = testConfig();
    const site = createSiteContext(config, FORMATS, new Date(Date.UTC(2026, 0, 1)));
    const fingerprint = buildFingerprint(config, FORMATS, VIDFEEDS_VERSION);
    const state = new BuildState(':memory:');
    const writer = new MemoryWriter();
    const build = (stopAfter?: number, reporter: BuildReporter = {}) => {
      const db = new Database(file, { readonly: true });
      let asked = 0;
      try {
        return runBuild({
          reader: new SiteReader(db, config.recommendationsCount),
          writer,
          state,
          site,
          formats: FORMATS,
          reporter,
          incremental: { changeLog: new ChangeLog(db), fingerprint },
          stopRequested: () => (stopAfter !== undefined && ++asked > stopAfter ? 'SIGTERM' : null),
        });
      } finally {
        db.close();
      }
    };

    expect(build().mode).toBe('full');
    const basis = state.basis();
    expect(basis).not.toBeNull();

    const edit = new Database(file);
    edit.exec(`UPDATE users SET display_name = display_name || ' (v2)'`);
    edit.close();

    const wrote: string[] = [];
    let stopped: unknown;
    try {
      build(10, { wrote: (path) => wrote.push(path) });
    } catch (error) {
      stopped = error;
    }
    expect(stopped).toBeInstanceOf(BuildInterrupted);
    expect((stopped as BuildInterrupted).signalNumber).toBe(15);
    expect(wrote.length).toBeGreaterThan(0);
    // Recorded, finished, the old basis kept, and the site files due.
    expect(state.interrupted()).toBe(false);
    expect(state.basis()).toEqual(basis);
    expect(state.siteFilesStale()).toBe(true);

    const rewritten: string[] = [];
    const next = build(undefined, { wrote: (path) => rewritten.push(path) });
    expect(next.mode).toBe('incremental');
    expect(rewritten.filter((path) => wrote.includes(path))).toEqual([]);
    expect(rewritten.length).toBeGreaterThan(0);

    const reference = buildInMemory(file, { config });
    expect([...writer.files.keys()].sort()).toEqual([...reference.writer.files.keys()].sort());
    for (const [path, body] of reference.writer.files) expect(writer.files.get(path)!.equals(body), path).toBe(true);

    // After a killed build (its mark left in the state), a stopped build keeps the mark: the
    // records it did not reach may claim bytes the killed build never got to disk.
    state.setMeta('in_progress', '2026-01-01T00:00:00.000Z');
    expect(() => build(3)).toThrow(BuildInterrupted);
    expect(state.interrupted()).toBe(true);
    expect(build().reason).toBe('the last build did not finish: every file is checked against its bytes on disk');
    state.close();
  });
});
