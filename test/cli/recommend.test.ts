import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

import { xmllintSchema, xpath } from '../helpers/validators.js';
import { useTempDir } from '../helpers/temp-dir.js';

/**
 * `vidfeeds recommend` as an operator runs it: the built CLI (`npm test` compiles dist/ first;
 * alone, run `npx tsc -p tsconfig.json` before this file) in a temporary directory.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin/vidfeeds.js');
const SCHEMA = join(ROOT, 'docs/schemas/recommendations.xsd');

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist/cli/main.js'))) throw new Error('dist/ is missing: run `npx tsc -p tsconfig.json` (npm test does) first');
});

function vidfeeds(cwd: string, ...args: string[]) {
  const result = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', env: { ...process.env, VIDFEEDS_DEBUG: '' } });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A temporary directory holding a small demo site database. */
function site(): { dir: string; db: string } {
  const dir = useTempDir('vidfeeds-cli-');
  const made = vidfeeds(dir, 'demo', '--db', 'site.sqlite', '--users', '12');
  expect(made.code, made.stderr).toBe(0);
  return { dir, db: join(dir, 'site.sqlite') };
}

function recommendationRows(db: string): number {
  const conn = new Database(db, { readonly: true });
  try {
    return (conn.prepare('SELECT count(*) AS n FROM recommendations').get() as { n: number }).n;
  } finally {
    conn.close();
  }
}

const GOOD = ['--title', 'Brand <new> & "shiny"', '--image', 'https://img.example.org/new.jpg', '--link', 'https://video.example.org/watch?v=new&t=1'];

describe('vidfeeds recommend', () => {
  it('holds a recommendation for moderation; once approved, the next build shows it first', () => {
    const { dir } = site();
    const stored = vidfeeds(dir, 'recommend', 'alice', '--db', 'site.sqlite', ...GOOD, '--description', 'Worth it', '--duration', '3:25');
    expect(stored.code, stored.stderr).toBe(0);
    const id = /^stored recommendation (\d+) for alice, pending moderation\n$/.exec(stored.stdout)?.[1];
    expect(id, stored.stdout).toBeDefined();
    expect(stored.stderr).toContain(`vidfeeds recommendations approve ${id} --db ${join(dir, 'site.sqlite')}`);

    const first = vidfeeds(dir, 'build', '--db', 'site.sqlite', '--out', 'out', '--user', 'alice');
    expect(first.code, first.stderr).toBe(0);
    const before = readFileSync(join(dir, 'out/alice/openrecommender/index.xml'), 'utf8');
    expect(before).not.toContain('Brand');

    const approved = vidfeeds(dir, 'recommendations', 'approve', id!, '--db', 'site.sqlite');
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toBe(`${id}\n`);
    const built = vidfeeds(dir, 'build', '--db', 'site.sqlite', '--out', 'out', '--user', 'alice');
    expect(built.code, built.stderr).toBe(0);
    const body = readFileSync(join(dir, 'out/alice/openrecommender/index.xml'), 'utf8');
    expect(xmllintSchema(SCHEMA, { alice: body }).ok).toBe(true);
    expect(xpath(body, 'string(/recommendations/recommendation[1]/title)')).toBe('Brand <new> & "shiny"');
    expect(xpath(body, 'string(/recommendations/recommendation[1]/title/@duration)')).toBe('03:25');
    expect(xpath(body, 'string(/recommendations/recommendation[1]/link)')).toBe('https://video.example.org/watch?v=new&t=1');
    expect(xpath(body, 'string(/recommendations/recommendation[1]/image)')).toBe('https://img.example.org/new.jpg');
    expect(xpath(body, 'string(/recommendations/recommendation[1]/description)')).toBe('Worth it');
    expect(xpath(body, 'count(/recommendations/recommendation)')).toBe('8');
  });

  it('publishes at once when the configuration says so, and refuses the same link twice (exit 1)', () => {
    const { dir, db } = site();
    writeFileSync(join(dir, 'vidfeeds.config.json'), JSON.stringify({ recommendationSubmit: { publishAtOnce: true } }));
    const stored = vidfeeds(dir, 'recommend', 'alice', '--db', 'site.sqlite', ...GOOD);
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.stdout).toMatch(/^stored recommendation \d+ for alice, published\n$/);
    expect(stored.stderr).toContain('vidfeeds build --user alice');
    const built = vidfeeds(dir, 'build', '--db', 'site.sqlite', '--out', 'out', '--user', 'alice');
    expect(built.code, built.stderr).toBe(0);
    const body = readFileSync(join(dir, 'out/alice/openrecommender/index.xml'), 'utf8');
    expect(xpath(body, 'string(/recommendations/recommendation[1]/title)')).toBe('Brand <new> & "shiny"');

    const rows = recommendationRows(db);
    const again = vidfeeds(dir, 'recommend', 'alice', '--db', 'site.sqlite', ...GOOD);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/"alice" already has this link \(recommendation \d+\); nothing stored/);
    expect(recommendationRows(db)).toBe(rows);
  });

  it('keeps to the per-user limits and the allowed hosts of the configuration', () => {
    const { dir, db } = site();
    writeFileSync(
      join(dir, 'limits.json'),
      JSON.stringify({ recommendationSubmit: { allowedHosts: ['*.example.org'], perUser: { limit: 100, windowSeconds: 3600, maxPending: 2 } } }),
    );
    const send = (n: number) =>
      vidfeeds(dir, 'recommend', 'alice', '--db', 'site.sqlite', '--config', 'limits.json', ...GOOD.slice(0, 4), '--link', `https://video.example.org/${n}`);
    const rows = recommendationRows(db);
    expect(send(1).code).toBe(0);
    expect(send(2).code).toBe(0);
    const third = send(3);
    expect(third.code).toBe(1);
    expect(third.stderr).toMatch(/this user has 2 recommendations awaiting moderation, the most allowed \(try again in 3600 seconds\); nothing stored/);
    const elsewhere = vidfeeds(dir, 'recommend', 'alice', '--db', 'site.sqlite', '--config', 'limits.json', ...GOOD.slice(0, 4), '--link', 'https://evil.example.net/x');
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain('--link: link must point at *.example.org');
    expect(recommendationRows(db)).toBe(rows + 2);
  });

  it('refuses bad input with a clear error naming the flag, exit 2, nothing stored', () => {
    const { dir, db } = site();
    const before = recommendationRows(db);
    const cases: Array<[string[], RegExp]> = [
      [['--image', 'https://img.example.org/i.jpg', '--link', 'https://v.example.org/'], /--title: required/],
      [['--title', 't', '--link', 'https://v.example.org/'], /--image: required/],
      [['--title', 't', '--image', 'https://img.example.org/i.jpg'], /--link: required/],
      [[...GOOD.slice(0, 4), '--link', 'javascript:alert(1)'], /--link: link must use http or https, not javascript:/],
      [['--title', 't', '--image', '/thumbs/1.jpg', '--link', 'https://v.example.org/'], /--image: image must be an absolute http\(s\) URL/],
      [['--title', 'x'.repeat(301), ...GOOD.slice(2)], /--title: title is 301 characters long; at most 300 are allowed/],
      [['--title', 'bell\u0007', ...GOOD.slice(2)], /--title: title must not contain control characters/],
      [[...GOOD, '--duration', '3:75'], /--duration: duration must be mm:ss .* or whole seconds/],
    ];
    for (const [args, message] of cases) {
      const result = vidfeeds(dir, 'recommend', 'alice', '--db', 'site.sqlite', ...args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(message);
      expect(result.stdout).toBe('');
    }
    expect(recommendationRows(db)).toBe(before);
  });

  it('refuses unknown, suspended and deleted users, exit 2, nothing stored', () => {
    const { dir, db } = site();
    const before = recommendationRows(db);
    for (const user of ['no-such-user', 'carol', 'dave', 'robots.txt']) {
      const result = vidfeeds(dir, 'recommend', user, '--db', 'site.sqlite', ...GOOD);
      expect(result.code, user).toBe(2);
      expect(result.stderr, user).toContain(`user "${user}" is not a published user of ${join(dir, 'site.sqlite')}`);
      expect(result.stderr, user).toContain('nothing stored');
    }
    expect(recommendationRows(db)).toBe(before);
  });

  it('refuses a database that does not exist instead of creating one', () => {
    const dir = useTempDir('vidfeeds-cli-');
    const result = vidfeeds(dir, 'recommend', 'alice', '--db', 'missing.sqlite', ...GOOD);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`database ${join(dir, 'missing.sqlite')} does not exist`);
    expect(existsSync(join(dir, 'missing.sqlite'))).toBe(false);
  });

  it("leaves the site database's journal mode alone and refuses an older schema rather than migrating it", () => {
    const { dir, db } = site();
    const conn = new Database(db);
    // demo makes WAL databases, as a live site's should be.
    expect(conn.pragma('journal_mode', { simple: true })).toBe('wal');
    conn.close();
    expect(vidfeeds(dir, 'recommend', 'alice', '--db', db, ...GOOD).code).toBe(0);
    const after = new Database(db);
    expect(after.pragma('journal_mode', { simple: true })).toBe('wal');
    after.pragma('user_version = 0');
    after.close();
    const old = vidfeeds(dir, 'recommend', 'alice', '--db', db, ...GOOD);
    expect(old.code).toBe(2);
    expect(old.stderr).toContain('has schema version 0, this vidfeeds needs version');
    const check = new Database(db, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(0);
    check.close();
  });

  it('needs --db and a user name (usage errors, exit 2)', () => {
    const dir = useTempDir('vidfeeds-cli-');
    expect(vidfeeds(dir, 'recommend', 'alice', ...GOOD).code).toBe(2);
    expect(vidfeeds(dir, 'recommend', '--db', 'x.sqlite', ...GOOD).code).toBe(2);
  });
});
