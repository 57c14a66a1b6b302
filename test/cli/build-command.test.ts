import Database from 'better-sqlite3';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../src/db/migrations.js';
import { cli, readTree } from '../helpers/cli.js';
import { readTree as readTreeFiles } from '../helpers/tree.js';
import { tempDir } from '../helpers/temp-dir.js';


let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = tempDir('vidfeeds-cli-'));
});
afterEach(() => cleanup());

function demo(users = 30): string {
  const db = join(dir, 'site.sqlite');
  const result = cli(['demo', '--db', db, '--users', String(users)]);
  expect(result.code, result.stderr).toBe(0);
  return db;
}

describe('vidfeeds build', () => {
  it('builds, prints a summary on stderr and nothing on stdout, and exits 0', () => {
    const db = demo();
    const result = cli(['build', '--db', db, '--out', join(dir, 'out')], { cwd: dir });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^vidfeeds: full build \(first build: no saved state\): \d+ documents in \d+\.\d\ds: \d+ written, 0 unchanged, 0 removed, 0 skipped\n$/);
    // No progress line when stderr is not a terminal.
    expect(result.stderr).not.toContain('\r');
    expect(existsSync(join(dir, 'out', 'alice', 'rss', 'index.rss'))).toBe(true);
    // The build state lives beside the output, not in it.
    expect(existsSync(join(dir, '.vidfeeds', 'out.state.sqlite'))).toBe(true);
  });

  it('leaves unchanged files alone, removes what is no longer published, and never what it did not write', () => {
    const db = demo();
    const out = join(dir, 'out');
    expect(cli(['build', '--db', db, '--out', out]).code).toBe(0);
    writeFileSync(join(out, 'operator-notes.txt'), 'mine');
    mkdirSync(join(out, 'alice', 'extra'));
    writeFileSync(join(out, 'alice', 'extra', 'keep.html'), 'mine too');
    const again = cli(['build', '--db', db, '--out', out]);
    expect(again.stderr).toMatch(/ 0 written, \d+ unchanged, 0 removed/);

    const conn = new Database(db);
    conn.prepare(`UPDATE users SET state = 'suspended' WHERE username = 'alice'`).run();
    conn.close();
    // Alice's documents are most of this small site: the removal guard is let through.
    const third = cli(['build', '--db', db, '--out', out, '--allow-removals']);
    expect(third.code, third.stderr).toBe(0);
    expect(third.stderr).toMatch(/ [1-9]\d* removed/);
    expect(existsSync(join(out, 'alice', 'rss'))).toBe(false);
    expect(readFileSync(join(out, 'alice', 'extra', 'keep.html'), 'utf8')).toBe('mine too');
    expect(readFileSync(join(out, 'operator-notes.txt'), 'utf8')).toBe('mine');
  });

  it('rewrites no identical file when the saved state is lost', () => {
    const db = demo();
    const out = join(dir, 'out');
    expect(cli(['build', '--db', db, '--out', out]).code).toBe(0);
    const before = readTreeFiles(out);
    rmSync(join(dir, '.vidfeeds'), { recursive: true, force: true });
    const again = cli(['build', '--db', db, '--out', out]);
    expect(again.code, again.stderr).toBe(0);
    // A lost state lost the times the sitemap's lastmod dates come from: they become this build's
    // time, so the sitemap alone is rewritten, unless both builds ran within the same second.
    const counts = /full build \(first build: no saved state\): (\d+) documents in [\d.]+s: (\d+) written, (\d+) unchanged/.exec(again.stderr);
    expect(counts, again.stderr).not.toBeNull();
    const rewritten = [...readTreeFiles(out)].filter(([path, file]) => {
      const old = before.get(path);
      return old === undefined || old.ino !== file.ino || old.mtimeNs !== file.mtimeNs;
    }).map(([path]) => path);
    expect(rewritten.every((path) => path === 'sitemap.xml'), rewritten.join(', ')).toBe(true);
    expect(Number(counts![2])).toBe(rewritten.length);
    expect(Number(counts![3])).toBe(Number(counts![1]) - rewritten.length);
  });

  it('builds one user with --user and some formats with --only, leaving the rest alone', () => {
    const db = demo();
    const out = join(dir, 'out');
    expect(cli(['build', '--db', db, '--out', out, '--only', 'rss,robots']).code).toBe(0);
    const first = readTree(out);
    expect([...first.keys()].every((p) => p === 'robots.txt' || p.endsWith('/rss/index.rss'))).toBe(true);
    expect(cli(['build', '--db', db, '--out', out, '--user', 'alice']).code).toBe(0);
    const second = readTree(out);
    const added = [...second.keys()].filter((p) => !first.has(p)).sort();
    // alice's own documents (those not built yet) and her public videos' documents, nothing else.
    const conn = new Database(db, { readonly: true });
    const videos = conn
      .prepare(`SELECT public_id FROM videos v JOIN users u ON u.id = v.user_id WHERE u.username = 'alice' AND v.visibility = 'public'`)
      .pluck()
      .all() as string[];
    conn.close();
    expect(videos.length).toBeGreaterThan(10);
    const notAlices = added.filter((p) => !p.startsWith('alice/') && !videos.includes(p.split('/')[0]!));
    expect(notAlices).toEqual([]);
    expect(added).toContain('alice/atom/index.atom');
    for (const id of videos) expect(added).toContain(`${id}/oembed/index.json`);
  });

  it('exits 2 naming the problem, before touching any file, on bad usage or configuration', () => {
    const db = demo();
    const out = join(dir, 'out');
    const cases: Array<[string[], RegExp]> = [
      [['build', '--out', out], /--db: required \(or `db` in the configuration\)/],
      [['build', '--db', join(dir, 'missing.sqlite'), '--out', out], /missing\.sqlite does not exist: create it with `vidfeeds init/],
      [['build', '--db', db, '--out', out, '--only', 'rss,podcast'], /--only: unknown format podcast; known formats: rss, atom/],
      [['build', '--db', db, '--out', out, '--base-url', 'ftp://example.org'], /--base-url: must use http or https, not ftp:/],
      [['build', '--db', db, '--out', out, '--base-url', 'https://example.org/?q=1'], /--base-url: must not carry a query or fragment/],
      [['build', '--db', db, '--out', out, '--config', join(dir, 'nope.json')], /nope\.json: does not exist/],
      [['build', '--db', db, '--out', out, '--bogus'], /--bogus: unknown option of `vidfeeds build`/],
      [['frobnicate'], /unknown command 'frobnicate'/],
    ];
    for (const [args, message] of cases) {
      const result = cli(args, { cwd: dir });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(existsSync(out), `${args.join(' ')} created the output directory`).toBe(false);
    }
  });

  it('reads vidfeeds.config.json and names a bad setting with its file', () => {
    const db = demo();
    const out = join(dir, 'out');
    writeFileSync(join(dir, 'vidfeeds.config.json'), JSON.stringify({ baseUrl: 'https://example.org/v', player: { width: 0 } }));
    const bad = cli(['build', '--db', db, '--out', out], { cwd: dir });
    expect(bad.code).toBe(2);
    // Named with its line and column: {"baseUrl":"https://example.org/v","player":{"width":0}} has the 0 at column 54.
    expect(bad.stderr).toContain(`configuration ${join(dir, 'vidfeeds.config.json')}:1:54: player.width must be from 1 to 10000, not 0`);
    writeFileSync(join(dir, 'vidfeeds.config.json'), JSON.stringify({ baseUrl: 'https://example.org/v', sitename: 'typo' }));
    expect(cli(['build', '--db', db, '--out', out], { cwd: dir }).stderr).toContain('sitename is not a known setting');
    writeFileSync(join(dir, 'vidfeeds.config.json'), '{ not json');
    expect(cli(['build', '--db', db, '--out', out], { cwd: dir }).stderr).toContain('is not valid JSON');
    expect(existsSync(out)).toBe(false);
    writeFileSync(join(dir, 'vidfeeds.config.json'), JSON.stringify({ baseUrl: 'https://example.org/v', siteName: 'From file' }));
    expect(cli(['build', '--db', db, '--out', out, '--site-name', 'From flag'], { cwd: dir }).code).toBe(0);
    const rss = readFileSync(join(out, 'alice', 'rss', 'index.rss'), 'utf8');
    expect(rss).toContain('<title>From flag: latest videos of');
    expect(rss).toContain('<link>https://example.org/v/alice/</link>');
  });
});

describe('vidfeeds init and schema versions', () => {
  it('creates, reports an up-to-date database, and refuses a newer schema naming both versions', () => {
    const db = join(dir, 'new.sqlite');
    expect(cli(['init', '--db', db]).stderr).toContain(`created ${db} at schema version ${SCHEMA_VERSION}`);
    expect(cli(['init', '--db', db]).stderr).toContain(`already at schema version ${SCHEMA_VERSION}`);
    const conn = new Database(db);
    conn.pragma(`user_version = ${SCHEMA_VERSION + 5}`);
    conn.close();
    for (const args of [['init', '--db', db], ['build', '--db', db, '--out', join(dir, 'out')]]) {
      const result = cli(args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`has schema version ${SCHEMA_VERSION + 5}, but this vidfeeds supports up to version ${SCHEMA_VERSION}`);
    }
  });

  it('refuses a file that is not a database', () => {
    const file = join(dir, 'text.sqlite');
    writeFileSync(file, 'just text, no database here '.repeat(100));
    const result = cli(['build', '--db', file, '--out', join(dir, 'out')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/is not a SQLite database|cannot be opened/);
  });
});

describe('vidfeeds demo', () => {
  it('is deterministic and refuses to overwrite without --force', () => {
    const a = join(dir, 'a.sqlite');
    const b = join(dir, 'b.sqlite');
    expect(cli(['demo', '--db', a, '--users', '25', '--seed', '3']).code).toBe(0);
    expect(cli(['demo', '--db', b, '--users', '25', '--seed', '3']).code).toBe(0);
    const dump = (file: string) => {
      const conn = new Database(file, { readonly: true });
      // site_meta holds the database's random identity (docs/database.md): two databases are never one.
      const tables = conn.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'site_meta' ORDER BY name`).all() as Array<{ name: string }>;
      const text = tables.map((t) => JSON.stringify(conn.prepare(`SELECT * FROM "${t.name}"`).raw().all())).join('\n');
      conn.close();
      return text;
    };
    expect(dump(a)).toBe(dump(b));
    const again = cli(['demo', '--db', a]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('exists: pass --force to replace it, or --if-missing to keep it');
    expect(cli(['demo', '--db', a, '--if-missing']).code).toBe(0);
    expect(cli(['demo', '--db', a, '--users', '0']).stderr).toContain('--users: must be from 1');
  });
});
