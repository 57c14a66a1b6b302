import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { BuildState } from '../../src/pipeline/build-state.js';
import { readStateChanges, type StateChanges } from '../../src/pipeline/state-changes.js';
import { useTempDir } from '../helpers/temp-dir.js';

/**
 * What a deploy reads of the build state: the paths changed and removed after a build, found by
 * the change sequence's indexes (a few changed rows never cost a walk of every row), and the same
 * from a state made before the tombstones had an index of their own.
 */

const HASH = (n: number) => Buffer.alloc(8, n);

/** Three builds: 200 paths, then 2 changed and 1 added, then 1 changed and 2 removed. */
function threeBuilds(file: string): void {
  const state = new BuildState(file);
  const record = (path: string, n: number) => state.record(path, 'rss', { kind: 'user', id: 1 }, 'u', HASH(n), 8);
  state.begin();
  for (let i = 0; i < 200; i++) record(`users/u${String(i).padStart(3, '0')}/rss`, 0);
  state.commit();
  state.begin();
  record('users/u010/rss', 1);
  record('users/u150/rss', 1);
  record('users/v000/rss', 1);
  state.commit();
  state.begin();
  record('users/u020/rss', 2);
  state.forget('users/u030/rss');
  state.forget('users/u005/rss');
  state.commit();
  state.close();
}

function opened(file: string): StateChanges {
  const changes = readStateChanges(file);
  if ('problem' in changes) throw new Error(changes.problem);
  return changes;
}

/** The state opened as a deploy opens it, with the queries of its path lists, as SQLite plans them on `file`. */
function openedWithPlans(file: string): { changes: StateChanges; plans: string } {
  const prepared: string[] = [];
  const prepare = Database.prototype.prepare;
  const spy = vi.spyOn(Database.prototype, 'prepare').mockImplementation(function (this: Database.Database, sql: string) {
    prepared.push(sql);
    return prepare.call(this, sql);
  });
  let changes: StateChanges;
  try {
    changes = opened(file);
  } finally {
    spy.mockRestore();
  }
  const db = new Database(file, { readonly: true });
  try {
    const lists = prepared.filter((sql) => /^SELECT path\b/.test(sql));
    const plan = (sql: string) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...sql.split('?').slice(1).map(() => 1)) as Array<{ detail: string }>).map((s) => s.detail).join('; ');
    return { changes, plans: lists.map(plan).join('\n') };
  } finally {
    db.close();
  }
}

describe('the changes a deploy reads from the build state', () => {
  it('lists what the builds after a given one changed, added and removed, in path order, by the sequence indexes', () => {
    const file = join(useTempDir(), 'state.sqlite');
    threeBuilds(file);
    const { changes, plans } = openedWithPlans(file);
    expect(plans).toMatch(/^SEARCH outputs USING INDEX outputs_seq \(seq>\?\)[^\n]*\nSEARCH removed USING INDEX removed_seq \(seq>\?\)/);
    expect([...changes.changedAfter(1)]).toEqual([
      { path: 'users/u010/rss', isNew: false },
      { path: 'users/u020/rss', isNew: false },
      { path: 'users/u150/rss', isNew: false },
      { path: 'users/v000/rss', isNew: true },
    ]);
    expect([...changes.changedAfter(2)]).toEqual([{ path: 'users/u020/rss', isNew: false }]);
    expect([...changes.removedAfter(1)]).toEqual(['users/u005/rss', 'users/u030/rss']);
    expect([...changes.removedAfter(3)]).toEqual([]);
    expect(changes.countAfter(1, 100)).toBe(6);
    changes.close();
  });

  it('reads the same from a state whose tombstones have no index yet', () => {
    const file = join(useTempDir(), 'state.sqlite');
    threeBuilds(file);
    const raw = new Database(file);
    raw.exec('DROP INDEX removed_seq');
    raw.close();
    const { changes, plans } = openedWithPlans(file);
    expect(plans).toMatch(/^SEARCH outputs USING INDEX outputs_seq/);
    expect([...changes.changedAfter(1)].map((c) => c.path)).toEqual(['users/u010/rss', 'users/u020/rss', 'users/u150/rss', 'users/v000/rss']);
    expect([...changes.removedAfter(1)]).toEqual(['users/u005/rss', 'users/u030/rss']);
    changes.close();
    // The next build's state makes it again.
    new BuildState(file).close();
    const again = openedWithPlans(file);
    expect(again.plans).toMatch(/USING INDEX removed_seq/);
    again.changes.close();
  });
});
