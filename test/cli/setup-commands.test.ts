import Database from 'better-sqlite3';
import { Ajv } from 'ajv';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_SCHEMA } from '../../src/config/config-schema.js';
import { SCHEMA_VERSION } from '../../src/db/migrations.js';
import { cli, cliAsync } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';


/** A SQLite file another application made: tables of its own, no schema version. */
function foreignDatabase(file: string, tables: string[]): Buffer {
  const db = new Database(file);
  for (const table of tables) db.exec(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO ${table} (name) VALUES ('kept')`);
  db.close();
  return readFileSync(file);
}

const WARNING = 'warning: ';

describe('vidfeeds init', () => {
  it('refuses a SQLite file that is not a vidfeeds database, leaving it byte for byte as it was', () => {
    const { dir } = tempDir('vidfeeds-init-');
    const file = join(dir, 'blog.sqlite');
    const before = foreignDatabase(file, ['posts', 'comments']);
    const result = cli(['init', '--db', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `vidfeeds: ${file} is not a vidfeeds database: it has other tables (comments, posts) and no vidfeeds schema version. ` +
        "Point --db at a new file and fill it from this one with `vidfeeds sync` (docs/adopting.md), or pass --force to add vidfeeds's tables to this one\n",
    );
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it("adds vidfeeds's tables to such a file with --force, keeping its own", () => {
    const { dir } = tempDir('vidfeeds-init-');
    const file = join(dir, 'blog.sqlite');
    foreignDatabase(file, ['posts']);
    const result = cli(['init', '--db', file, '--force']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr.startsWith(`vidfeeds: added vidfeeds's tables (schema version ${SCHEMA_VERSION}) to ${file}\nvidfeeds: next:\n`)).toBe(true);
    const db = new Database(file, { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(db.prepare('SELECT name FROM posts').pluck().all()).toEqual(['kept']);
    db.close();
    // Now it is one: a second init needs no --force.
    expect(cli(['init', '--db', file]).stderr).toContain(`already at schema version ${SCHEMA_VERSION}`);
  });

  it('with --force, names the clash when a table of the file has a name vidfeeds needs, and changes nothing', () => {
    const { dir } = tempDir('vidfeeds-init-');
    const file = join(dir, 'app.sqlite');
    foreignDatabase(file, ['users']);
    const before = readFileSync(file);
    const result = cli(['init', '--db', file, '--force']);
    expect(result.code).toBe(2);
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(result.stderr).toBe(`vidfeeds: cannot add vidfeeds's tables to ${file} (nothing was changed): table users already exists\n`);
    const db = new Database(file, { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(0);
    expect(db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).pluck().all()).toEqual(['users']);
    db.close();
  });

  it('refuses a file with a schema version but not our tables, and creates a database in an empty file', () => {
    const { dir } = tempDir('vidfeeds-init-');
    const versioned = join(dir, 'versioned.sqlite');
    foreignDatabase(versioned, ['notes']);
    const db = new Database(versioned);
    db.pragma('user_version = 1');
    db.close();
    expect(cli(['init', '--db', versioned]).stderr).toContain("has other tables (notes) and schema version 1 but not vidfeeds's tables");
    const empty = join(dir, 'empty.sqlite');
    writeFileSync(empty, '');
    const made = cli(['init', '--db', empty]);
    expect(made.code, made.stderr).toBe(0);
  });

  it('writes a starter configuration that the schema and vidfeeds accept, and never replaces one', () => {
    const { dir } = tempDir('vidfeeds-init-');
    const made = cli(['init', '--db', 'site.sqlite', '--write-config', '--base-url', 'https://videos.example.org', '--site-name', 'Example Videos'], { cwd: dir });
    expect(made.code, made.stderr).toBe(0);
    // Then the next steps: the database is in the configuration now, so they need no --db.
    expect(made.stderr).toBe(
      `vidfeeds: created ${join(dir, 'site.sqlite')} at schema version ${SCHEMA_VERSION}\nvidfeeds: wrote ${join(dir, 'vidfeeds.config.json')}\n` +
        'vidfeeds: next:\n  1. build the tree: vidfeeds build --out out\n  2. look at it: vidfeeds serve --out out, then open http://127.0.0.1:8080/sitemap.xml\n' +
        '  3. serve it in production: vidfeeds hosting nginx --root out (docs/hosting.md)\n',
    );
    const config = JSON.parse(readFileSync(join(dir, 'vidfeeds.config.json'), 'utf8')) as Record<string, unknown>;
    expect(config).toMatchObject({ baseUrl: 'https://videos.example.org', siteName: 'Example Videos', recommendationsCount: 8, db: 'site.sqlite', out: null });
    expect(config.siteDescription).toBe('Videos shared by the people of Example Videos.');
    const configured = cli(['build'], { cwd: dir });
    expect(configured.code, configured.stderr).toBe(0);
    expect(readFileSync(join(dir, 'out', 'robots.txt'), 'utf8')).toContain('Sitemap: https://videos.example.org/sitemap.xml');
    // $schema points at the schema file shipped with vidfeeds, for an editor.
    expect(config.$schema).toMatch(/^file:\/\/.*\/schemas\/vidfeeds\.config\.schema\.json$/);
    expect(readFileSync(new URL(config.$schema as string), 'utf8')).toContain('"additionalProperties": false');
    expect(new Ajv({ strict: false, formats: { uri: true, 'uri-template': true } }).validate(CONFIG_SCHEMA, config)).toBe(true);
    // The build reads it as it is (no warning: the base URL is set).
    const built = cli(['build', '--db', 'site.sqlite', '--out', 'out'], { cwd: dir });
    expect(built.code, built.stderr).toBe(0);
    expect(built.stderr).not.toContain('warning');

    const again = cli(['init', '--write-config'], { cwd: dir });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`${join(dir, 'vidfeeds.config.json')} exists: init never replaces a configuration`);
    const named = cli(['init', '--write-config', 'other.json', '--base-url', 'ftp://x.example'], { cwd: dir });
    expect(named.code).toBe(2);
    expect(named.stderr).toBe('vidfeeds: configuration --base-url: must use http or https, not ftp:\n');
    expect(existsSync(join(dir, 'other.json'))).toBe(false);
    expect(cli(['init'], { cwd: dir }).stderr).toContain('init needs --db FILE, --write-config [FILE], or both');
  });
});

describe('vidfeeds build: the default base URL and --user', () => {
  it('warns once when a site that is not the demo is built with the default base URL', () => {
    const { dir } = tempDir('vidfeeds-build-');
    writeFileSync(join(dir, 'empty.json'), '{}');
    expect(cli(['init', '--db', 'site.sqlite'], { cwd: dir }).code).toBe(0);
    const db = new Database(join(dir, 'site.sqlite'));
    for (let i = 1; i <= 3; i++) db.prepare(`INSERT INTO users (username, created_at, updated_at) VALUES (?, 0, 0)`).run(`user${i}`);
    db.close();
    const plain = cli(['build', '--db', 'site.sqlite', '--out', 'out'], { cwd: dir });
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stderr.split('\n').filter((l) => l.includes(WARNING))).toEqual([
      'vidfeeds: warning: baseUrl, logoUrl, player.playerUrl still at the default http://localhost:8080: the documents will link there; set them in vidfeeds.config.json (or pass --base-url)',
    ]);
    // The base URL alone leaves the logo and the player on localhost: still worth a warning.
    const flag = cli(['build', '--db', 'site.sqlite', '--out', 'out', '--base-url', 'https://videos.example.org'], { cwd: dir });
    expect(flag.stderr.split('\n').filter((l) => l.includes(WARNING))).toEqual([
      'vidfeeds: warning: logoUrl, player.playerUrl still at the default http://localhost:8080: the documents will link there; set them in vidfeeds.config.json',
    ]);
    writeFileSync(join(dir, 'vidfeeds.config.json'), JSON.stringify({ baseUrl: 'https://videos.example.org', logoUrl: '', player: { playerUrl: 'https://videos.example.org/player.swf' } }));
    expect(cli(['build', '--db', 'site.sqlite', '--out', 'out'], { cwd: dir }).stderr).not.toContain('warning');
    // The demo database says what it is: its preview on localhost is what the default is for.
    expect(cli(['demo', '--db', 'demo.sqlite', '--users', '10'], { cwd: dir }).code).toBe(0);
    const demo = cli(['build', '--db', 'demo.sqlite', '--out', 'demo-out', '--config', join(dir, 'empty.json')], { cwd: dir });
    expect(demo.code, demo.stderr).toBe(0);
    expect(demo.stderr).not.toContain('warning');
  });

  it('refuses a --user the database does not hold, exit 2, before any file is touched', () => {
    const { dir } = tempDir('vidfeeds-build-');
    expect(cli(['demo', '--db', 'site.sqlite', '--users', '10'], { cwd: dir }).code).toBe(0);
    const nobody = cli(['build', '--db', 'site.sqlite', '--out', 'out', '--user', 'nobody'], { cwd: dir });
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toBe(`vidfeeds: --user "nobody": no such user in ${join(dir, 'site.sqlite')}\n`);
    expect(existsSync(join(dir, 'out'))).toBe(false);
    expect(existsSync(join(dir, '.vidfeeds'))).toBe(false);
    expect(cli(['build', '--db', 'site.sqlite', '--out', 'out', '--user', 'ALICE'], { cwd: dir }).stderr).toContain('did you mean "alice"?');
    // A suspended user is known: building them is how their documents go.
    const carol = cli(['build', '--db', 'site.sqlite', '--out', 'out', '--user', 'carol'], { cwd: dir });
    expect(carol.code, carol.stderr).toBe(0);
    expect(carol.stderr).toContain('0 written');
  });

  it('warns once in watch too, before its first build', async () => {
    const { dir } = tempDir('vidfeeds-watch-');
    expect(cli(['init', '--db', 'site.sqlite'], { cwd: dir }).code).toBe(0);
    const child = cliAsync(['watch', '--db', 'site.sqlite', '--out', 'out'], { cwd: dir });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    try {
      for (let waited = 0; !/full build/.test(stderr); waited += 50) {
        if (waited > 30_000 || child.exitCode !== null) throw new Error(`watch did not build:\n${stderr}`);
        await new Promise((done) => setTimeout(done, 50));
      }
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
    expect(stderr.split('\n').filter((l) => l.includes(WARNING)).map((l) => l.replace(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /, ''))).toEqual([
      'vidfeeds: warning: baseUrl, logoUrl, player.playerUrl still at the default http://localhost:8080: the documents will link there; set them in vidfeeds.config.json (or pass --base-url)',
    ]);
  });
});

describe('vidfeeds demo --users', () => {
  it('writes exactly that many users, the fixed characters first', () => {
    const { dir } = tempDir('vidfeeds-demo-');
    for (const [users, expected] of [
      [5, ['alice', 'bob', 'carol', 'dave', 'مريم']],
      [1, ['alice']],
    ] as const) {
      const file = join(dir, `demo-${users}.sqlite`);
      const made = cli(['demo', '--db', file, '--users', String(users)]);
      expect(made.code, made.stderr).toBe(0);
      expect(made.stderr).toContain(`: ${users} users,`);
      const db = new Database(file, { readonly: true });
      expect(db.prepare('SELECT username FROM users ORDER BY id').pluck().all()).toEqual(expected);
      // Every reference stays inside the database.
      expect(db.pragma('foreign_key_check')).toEqual([]);
      db.close();
      expect(cli(['build', '--db', file, '--out', join(dir, `out-${users}`)]).code).toBe(0);
    }
  });
});
