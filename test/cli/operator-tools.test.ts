import Database from 'better-sqlite3';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, readTree } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * What an operator relies on before letting vidfeeds run unattended: a dry run that tells the
 * truth, a guard against emptying the site, a repair, logs a collector can read, and a command line
 * that reports every mistake at once. All through the built binary, as an operator runs it.
 */

let seed: string;

beforeAll(() => {
  const { dir } = tempDir('vidfeeds-operator-seed-');
  seed = join(dir, 'site.sqlite');
  const made = cli(['demo', '--db', seed, '--users', '30']);
  expect(made.code, made.stderr).toBe(0);
});

/** A built site of its own: the database, the tree and the state beside it. */
function builtSite(): { dir: string; db: string; out: string; state: string } {
  const { dir } = tempDir('vidfeeds-operator-');
  const db = join(dir, 'site.sqlite');
  writeFileSync(db, readFileSync(seed));
  const out = join(dir, 'out');
  const built = cli(['build', '--db', db, '--out', out]);
  expect(built.code, built.stderr).toBe(0);
  return { dir, db, out, state: join(dir, '.vidfeeds', 'out.state.sqlite') };
}

function edit(db: string, sql: string): void {
  const connection = new Database(db);
  connection.pragma('foreign_keys = OFF');
  connection.exec(sql);
  connection.close();
}

function json(stdout: string): { exitCode: number; dryRun?: boolean; counts: Record<string, number>; urls: { written: string[]; removed: string[] } } {
  return JSON.parse(stdout) as ReturnType<typeof json>;
}

describe('build --dry-run', () => {
  it('changes no file, no state and no change log position, and reports what the real build then does', () => {
    const site = builtSite();
    // Changes of every kind: a document changes, one is gone, one is new.
    edit(site.db, "UPDATE users SET display_name = 'Alice Again' WHERE username = 'alice'; UPDATE videos SET visibility = 'private' WHERE id = (SELECT MIN(id) FROM videos WHERE visibility = 'public')");
    const tree = readTree(site.out);
    const state = readFileSync(site.state);
    const database = readFileSync(site.db);
    const dry = cli(['build', '--db', site.db, '--out', site.out, '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stderr).toMatch(/^vidfeeds: dry run, nothing written or removed: incremental build .*: \d+ to write, \d+ unchanged, \d+ to remove/m);
    expect(readTree(site.out)).toEqual(tree);
    expect(readFileSync(site.state).equals(state)).toBe(true);
    expect(readFileSync(site.db).equals(database)).toBe(true);
    expect(readdirSync(site.out).filter((name) => name.startsWith('.vidfeeds-staging'))).toEqual([]);
    const would = json(dry.stdout);
    expect(would.dryRun).toBe(true);
    expect(would.urls.written.length).toBeGreaterThan(0);
    expect(would.urls.removed.length).toBeGreaterThan(0);

    const real = json(cli(['build', '--db', site.db, '--out', site.out, '--json']).stdout);
    expect(real.exitCode).toBe(0);
    expect(real.urls).toEqual(would.urls);
    expect({ ...real.counts, bytesWritten: 0 }).toEqual({ ...would.counts, bytesWritten: 0 });
  });

  it('takes no lock a real build waits for, and creates nothing for a first build', () => {
    const { dir } = tempDir('vidfeeds-operator-first-');
    const out = join(dir, 'out');
    const dry = cli(['build', '--db', seed, '--out', out, '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(json(dry.stdout).counts.written).toBeGreaterThan(100);
    expect(existsSync(out)).toBe(false);
    expect(existsSync(join(dir, '.vidfeeds'))).toBe(false);
  });
});

describe('the removal guard', () => {
  it('stops a build that would remove most of the site, before removing anything, and lets it through when allowed', () => {
    const site = builtSite();
    const tree = readTree(site.out);
    edit(site.db, 'DELETE FROM users');
    const stopped = cli(['build', '--db', site.db, '--out', site.out]);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(/the build would remove \d+ of \d+ published documents \(\d+(\.\d)?%\), more than maxRemovalShare allows \(10%, and at least 100\): nothing was removed; if the database is right, build again with --allow-removals/);
    expect(readTree(site.out)).toEqual(tree);
    // The tree is still the last good build's, as check confirms.
    expect(cli(['check', '--out', site.out]).code).toBe(0);

    const allowed = cli(['build', '--db', site.db, '--out', site.out, '--allow-removals']);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(existsSync(join(site.out, 'alice'))).toBe(false);
  });

  it('lets an ordinary deletion through, and takes its share from the configuration', () => {
    const site = builtSite();
    edit(site.db, "DELETE FROM users WHERE username = 'bob'");
    const one = cli(['build', '--db', site.db, '--out', site.out]);
    expect(one.code, one.stderr).toBe(0);
    expect(existsSync(join(site.out, 'bob'))).toBe(false);
    writeFileSync(join(site.dir, 'vidfeeds.config.json'), JSON.stringify({ maxRemovalShare: 0.001, removalGuardMinimum: 1 }));
    edit(site.db, "DELETE FROM users WHERE username = 'alice'");
    const strict = cli(['build', '--db', site.db, '--out', site.out], { cwd: site.dir });
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain('more than maxRemovalShare allows (0.1%, and at least 1)');
    expect(existsSync(join(site.out, 'alice', 'rss', 'index.rss'))).toBe(true);
  });
});

describe('build --full repairs the tree', () => {
  it('rewrites a changed and a missing file and removes a stray one; check names the repair, then passes', () => {
    const site = builtSite();
    const tree = readTree(site.out);
    appendFileSync(join(site.out, 'alice', 'rss', 'index.rss'), ' ');
    rmSync(join(site.out, 'bob', 'foaf', 'index.rdf'));
    writeFileSync(join(site.out, 'alice', 'atom', 'old.xml'), 'left behind');
    const found = cli(['check', '--out', site.out]);
    expect(found.code).toBe(1);
    expect(found.stdout).toContain('alice/rss/index.rss');
    expect(found.stdout).toContain('bob/foaf/index.rdf: missing');
    expect(found.stdout).toContain('alice/atom/old.xml: not written by the last build');
    expect(found.stderr).toContain(`to repair: vidfeeds build --full --db SITE.sqlite --out ${site.out}`);

    const repaired = cli(['build', '--db', site.db, '--out', site.out, '--full']);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.stderr).toMatch(/: 2 written, \d+ unchanged, 1 removed/);
    expect(readTree(site.out)).toEqual(tree);
    expect(cli(['check', '--out', site.out, '--db', site.db]).code).toBe(0);
  });
});

describe('logs', () => {
  it('--log-format json writes JSON lines with time and level; --log-level filters them', () => {
    const site = builtSite();
    const result = cli(['build', '--db', site.db, '--out', site.out, '--log-format', 'json']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stderr.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(new Date(line.time as string).toISOString()).toBe(line.time);
      expect(['error', 'warn', 'info', 'debug']).toContain(line.level);
    }
    const summary = lines.at(-1)!;
    expect(summary).toMatchObject({ level: 'info', mode: 'incremental', written: 0 });
    expect(summary.msg).toMatch(/^incremental build/);
    const quiet = cli(['build', '--db', site.db, '--out', site.out, '--log-level', 'warn']);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
    // The configuration sets them too; a flag wins.
    writeFileSync(join(site.dir, 'vidfeeds.config.json'), JSON.stringify({ logFormat: 'json', db: 'site.sqlite', out: 'out' }));
    const configured = cli(['build'], { cwd: site.dir });
    expect(configured.code, configured.stderr).toBe(0);
    expect(JSON.parse(configured.stderr.trim().split('\n').at(-1)!)).toMatchObject({ level: 'info' });
    expect(cli(['build', '--log-format', 'text'], { cwd: site.dir }).stderr).toMatch(/^vidfeeds: incremental build/m);
  });
});

describe('the command line', () => {
  it('reports every flag error at once, in one style, exit 2, before anything is touched', () => {
    const { dir } = tempDir('vidfeeds-operator-flags-');
    const result = cli(['build', '--db', join(dir, 'site.sqlite'), '--out', join(dir, 'out'), '--stric', '--wait', 'soon', '--log-level', 'loud', '--only'], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'vidfeeds: command line: 4 problems:\n' +
        '  --stric: unknown option of `vidfeeds build`; did you mean --strict?\n' +
        '  --wait: needs a number of seconds (0 or more), not "soon"\n' +
        '  --log-level: must be one of error, warn, info, debug, not "loud"\n' +
        '  --only: needs a value (<formats>)\n',
    );
    expect(readdirSync(dir)).toEqual([]);
    // Options only where they apply.
    expect(cli(['serve', '--db', seed, '--strict']).stderr).toContain('--strict: unknown option of `vidfeeds serve`');
    expect(cli(['recommend', 'alice', '--db', seed, '--title', 't', '--image', 'https://x.example/i.png', '--link', 'https://x.example/', '--base-url', 'https://x']).stderr).toContain('--base-url: unknown option of `vidfeeds recommend`');
  });

  it('marks required options and lists exit codes in help', () => {
    const help = cli(['build', '--help']).stdout;
    expect(help).toMatch(/--db <file> +site database \(SQLite\) \(required, unless `db` is in/);
    expect(help).toMatch(/Exit codes:\n {2}0 {3}built\n {2}1 {3}/);
    expect(help).toContain('75  another build holds the lock');
    for (const command of [['check'], ['watch'], ['serve'], ['demo'], ['init'], ['recommend'], ['hosting', 'nginx'], ['shards', 'check']]) {
      expect(cli([...command, '--help']).stdout, command.join(' ')).toContain('Exit codes:');
    }
    expect(cli(['serve', '--help']).stdout).not.toContain('--strict');
  });

  it('names a folder given as --db, and makes no folder for a database that is not there', () => {
    const { dir } = tempDir('vidfeeds-operator-db-');
    mkdirSync(join(dir, 'data'));
    writeFileSync(join(dir, 'data', 'site.sqlite'), readFileSync(seed));
    const folder = cli(['build', '--db', 'data', '--out', 'out'], { cwd: dir });
    expect(folder.code).toBe(2);
    expect(folder.stderr).toBe(`vidfeeds: database ${join(dir, 'data')} is a folder, not a SQLite file: name the database file itself; it holds ${join(dir, 'data', 'site.sqlite')}\n`);
    const missing = cli(['build', '--db', 'nothing.sqlite', '--out', 'out'], { cwd: dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('does not exist: create it with `vidfeeds init --db');
    expect(readdirSync(dir).sort()).toEqual(['data']);
  });
});
