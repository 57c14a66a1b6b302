import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { insertRow, insertUser, T0 } from '../helpers/site-fixture.js';
import { useTempDir } from '../helpers/temp-dir.js';

/**
 * `vidfeeds recommendations list|approve|reject` as an operator runs it: the built CLI on a small
 * demo database with pending rows of two users and two addresses.
 */

function site(): { dir: string; file: string; ids: Record<string, number> } {
  const dir = useTempDir('vidfeeds-moderate-');
  const made = cli(['demo', '--db', 'site.sqlite', '--users', '3'], { cwd: dir });
  expect(made.code, made.stderr).toBe(0);
  const file = join(dir, 'site.sqlite');
  const db = new Database(file);
  const ann = insertUser(db, { username: 'ann' });
  const ben = insertUser(db, { username: 'ben' });
  const add = (name: string, user: number, status: string, from: string | null, at: number, title = name) => {
    insertRow(db, 'recommendations', {
      user_id: user, title, link: `https://v.example.org/${name}`, image: 'https://v.example.org/i.jpg',
      status, submitter_address: from, created_at: T0 + at,
    });
    return (db.prepare('SELECT last_insert_rowid() AS id').get() as { id: number }).id;
  };
  const ids = {
    a1: add('a1', ann.id, 'pending', '192.0.2.1', 1),
    a2: add('a2', ann.id, 'pending', '192.0.2.2', 2, 'Evil \u001b[31mred\u202e'),
    a3: add('a3', ann.id, 'rejected', '192.0.2.1', 3),
    b1: add('b1', ben.id, 'pending', '192.0.2.1', 4),
    b2: add('b2', ben.id, 'approved', null, 5),
  };
  db.close();
  return { dir, file, ids };
}

function statuses(file: string): Record<string, string> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db.prepare<[], { title: string; status: string }>(`SELECT substr(link, 23) AS title, status FROM recommendations WHERE link LIKE 'https://v.example.org/%'`).all();
    return Object.fromEntries(rows.map((r) => [r.title, r.status]));
  } finally {
    db.close();
  }
}

describe('vidfeeds recommendations', () => {
  it('lists the pending ones newest first, by user, address or status, with what a terminal cannot act on replaced', () => {
    const { dir, ids } = site();
    const run = (...args: string[]) => cli(['recommendations', 'list', '--db', 'site.sqlite', ...args], { cwd: dir });
    const pending = run();
    expect(pending.code, pending.stderr).toBe(0);
    expect(pending.stdout.split('\n').filter(Boolean).map((l) => Number(l.split('\t')[0]))).toEqual([ids.b1, ids.a2, ids.a1]);
    expect(pending.stderr).toContain('3 pending recommendations');
    expect(pending.stdout).toContain(`${ids.a2}\tpending\tann\t2024-01-01T00:00:02Z\t192.0.2.2\thttps://v.example.org/a2\tEvil \ufffd[31mred\ufffd\n`);
    expect(run('--user', 'ann', '--status', 'all').stdout.split('\n').filter(Boolean)).toHaveLength(3);
    expect(run('--from', '192.0.2.1').stdout.split('\n').filter(Boolean).map((l) => Number(l.split('\t')[0]))).toEqual([ids.b1, ids.a1]);
    const json = run('--status', 'approved', '--user', 'ben', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({ id: ids.b2, username: 'ben', status: 'approved', submitter: null });
    expect(run('--limit', '1').stdout.split('\n').filter(Boolean)).toHaveLength(1);
    const bad = run('--status', 'spam');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('must be one of pending, approved, rejected, all');
  });

  it('approves by user and rejects by address, pending rows only; by id, any row', () => {
    const { dir, file, ids } = site();
    const run = (...args: string[]) => cli(['recommendations', ...args, '--db', 'site.sqlite'], { cwd: dir });
    const rejected = run('reject', '--from', '192.0.2.1');
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(rejected.stdout).toBe(`${ids.a1}\n${ids.b1}\n`);
    expect(run('approve', '--user', 'ann').stdout).toBe(`${ids.a2}\n`);
    expect(statuses(file)).toEqual({ a1: 'rejected', a2: 'approved', a3: 'rejected', b1: 'rejected', b2: 'approved' });
    // A bulk approve finds nothing pending; an id reaches a rejected row.
    expect(run('approve', '--all').stdout).toBe('');
    expect(run('approve', String(ids.a3)).stdout).toBe(`${ids.a3}\n`);
    expect(statuses(file).a3).toBe('approved');
  });

  it('changes nothing when an id does not exist (exit 1) or nothing is selected (exit 2)', () => {
    const { dir, file, ids } = site();
    const before = statuses(file);
    const run = (...args: string[]) => cli(['recommendations', ...args, '--db', 'site.sqlite'], { cwd: dir });
    const missing = run('approve', String(ids.a1), '999999');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no recommendation 999999');
    for (const args of [['approve'], ['reject', '--all', '--user', 'ann'], ['reject', 'x1'], ['reject', '0']]) {
      const result = run(...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(/needs ids|takes no ids|is not a recommendation id/);
    }
    expect(statuses(file)).toEqual(before);
    const db = new Database(file, { readonly: true });
    const logged = db.prepare(`SELECT count(*) AS n FROM change_log WHERE table_name = 'recommendations' AND op = 'update'`).get();
    db.close();
    expect(logged).toEqual({ n: 0 });
  });

  it('records each change of status in the change log, with the status before and after', () => {
    const { dir, file, ids } = site();
    expect(cli(['recommendations', 'approve', String(ids.a1), '--db', 'site.sqlite'], { cwd: dir }).code).toBe(0);
    const db = new Database(file, { readonly: true });
    const row = db.prepare(`SELECT old_keys, new_keys FROM change_log WHERE table_name = 'recommendations' AND op = 'update'`).get() as { old_keys: string; new_keys: string };
    const reviewed = db.prepare('SELECT reviewed_at FROM recommendations WHERE id = ?').get(ids.a1) as { reviewed_at: number };
    db.close();
    expect(JSON.parse(row.old_keys)).toMatchObject({ id: ids.a1, status: 'pending' });
    expect(JSON.parse(row.new_keys)).toMatchObject({ id: ids.a1, status: 'approved' });
    expect(reviewed.reviewed_at).toBeGreaterThan(T0);
  });
});
