import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BuildState } from '../../src/pipeline/build-state.js';
import { useTempDir } from '../helpers/temp-dir.js';

/** Whether the state file has the index that finds a user's outputs, read by a connection of its own. */
function hasUserIndex(file: string): boolean {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'outputs_user'`).get() !== undefined;
  } finally {
    db.close();
  }
}

function recordUsers(state: BuildState, names: readonly string[]): void {
  for (const [id, name] of names.entries()) state.record(`${name}/rss/index.rss`, 'rss', { kind: 'user', id }, name, Buffer.alloc(8, id), 10);
}

describe("the build state's user index", () => {
  it('is made at the commit of a build that began with no outputs, and kept through later builds', () => {
    const file = join(useTempDir(), 'state.sqlite');
    const state = new BuildState(file);
    state.begin();
    recordUsers(state, ['carol', 'alice', 'bob']);
    expect(hasUserIndex(file)).toBe(false);
    state.commit();
    expect(hasUserIndex(file)).toBe(true);
    state.begin();
    expect(hasUserIndex(file)).toBe(true);
    recordUsers(state, ['carol', 'alice', 'bob', 'dave']);
    state.commit();
    const db = new Database(file, { readonly: true });
    const plan = db.prepare(`EXPLAIN QUERY PLAN SELECT path FROM outputs WHERE user = 'bob'`).all() as Array<{ detail: string }>;
    expect(plan.map((step) => step.detail).join('\n')).toMatch(/USING INDEX outputs_user/);
    db.close();
    state.close();
  });

  it('is made when the build rolls back, and when the state of a killed build is opened', () => {
    const file = join(useTempDir(), 'state.sqlite');
    const state = new BuildState(file);
    state.begin();
    recordUsers(state, ['alice']);
    state.rollback();
    expect(hasUserIndex(file)).toBe(true);
    state.close();
    // A build killed before its commit leaves the index dropped: the next open makes it.
    const raw = new Database(file);
    raw.exec('DROP INDEX outputs_user');
    raw.close();
    new BuildState(file).close();
    expect(hasUserIndex(file)).toBe(true);
  });
});
