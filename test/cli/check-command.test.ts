import Database from 'better-sqlite3';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { STAGING_DIR } from '../../src/pipeline/write/output-writer.js';
import { cli } from '../helpers/cli.js';
import { validateReport } from '../helpers/report-schema.js';

import { documentHash } from '../../src/render/document-hash.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * `vidfeeds check` run as a user runs it: each test builds a small demo site, then damages the
 * tree the way a partial sync, a disk error, a hand edit or a stray copy would.
 */

let dir: string;
let db: string;
let out: string;
beforeEach(() => {
  ({ dir } = tempDir('vidfeeds-check-'));
  db = join(dir, 'site.sqlite');
  out = join(dir, 'out');
  expect(cli(['demo', '--db', db, '--users', '12']).code).toBe(0);
  const built = cli(['build', '--db', db, '--out', out]);
  expect(built.code, built.stderr).toBe(0);
});

function check(...extra: string[]) {
  return cli(['check', '--out', out, ...extra], { cwd: dir });
}

/** The lines check printed on stdout, one per problem. */
function lines(stdout: string): string[] {
  return stdout.split('\n').filter(Boolean);
}

function sql(statement: string): unknown[] {
  const conn = new Database(db);
  try {
    return conn.prepare(statement).raw().all().map((row) => (row as unknown[])[0]);
  } finally {
    conn.close();
  }
}

describe('vidfeeds check', () => {
  it('passes a tree as built, with and without the database, and leaves the operator\'s own files alone', () => {
    // Files vidfeeds never writes or removes are not its business.
    writeFileSync(join(out, 'operator-notes.txt'), 'mine');
    mkdirSync(join(out, 'alice', 'extra'));
    writeFileSync(join(out, 'alice', 'extra', 'keep.html'), 'mine too');
    const plain = check();
    expect(plain.code, plain.stdout + plain.stderr).toBe(0);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toMatch(/^vidfeeds: the tree is as built: \d+ recorded files, \d+ files where vidfeeds writes, [1-9]\d* checked against a schema, in [\d.]+s\n$/);
    const withDb = check('--db', db);
    expect(withDb.code, withDb.stdout).toBe(0);
    expect(withDb.stderr).toMatch(/[1-9]\d* users and [1-9]\d* videos compared with the database/);
    expect(check('--quiet').stderr).toBe('');
  });

  it('names a truncated file', () => {
    truncateSync(join(out, 'alice', 'rss', 'index.rss'), 100);
    const result = check();
    expect(result.code).toBe(1);
    expect(lines(result.stdout)).toEqual([expect.stringMatching(/^alice\/rss\/index\.rss: 100 bytes, the last build wrote \d+ \(truncated\)$/)]);
    expect(result.stderr).toMatch(/1 problem:/);
  });

  it('checks the compressed forms: each there and decompressing to its document, none taken for a stray', () => {
    writeFileSync(join(dir, 'vidfeeds.config.json'), JSON.stringify({ compress: ['gzip', 'br'] }));
    const built = cli(['build', '--db', db, '--out', out], { cwd: dir });
    expect(built.code, built.stderr).toBe(0);
    expect(existsSync(join(out, 'alice', 'rss', 'index.rss.gz'))).toBe(true);
    const good = check();
    expect(good.code, good.stdout + good.stderr).toBe(0);
    // A form of another document's bytes (valid gzip, wrong content), and a missing one.
    cpSync(join(out, 'bob', 'rss', 'index.rss.gz'), join(out, 'alice', 'rss', 'index.rss.gz'));
    rmSync(join(out, 'alice', 'foaf', 'index.rdf.br'));
    const result = check();
    expect(result.code).toBe(1);
    expect(lines(result.stdout)).toEqual([
      expect.stringMatching(/^alice\/foaf\/index\.rdf\.br: missing: the last build wrote a br form beside alice\/foaf\/index\.rdf$/),
      expect.stringMatching(/^alice\/rss\/index\.rss\.gz: .*(differ|not)/),
    ]);
  });

  it('names a file with one changed byte', () => {
    const file = join(out, 'bob', 'atom', 'index.atom');
    const body = readFileSync(file);
    const at = body.indexOf('<title>') + 7;
    body[at] = body[at] === 0x58 ? 0x59 : 0x58;
    writeFileSync(file, body);
    const result = check();
    expect(result.code).toBe(1);
    expect(lines(result.stdout)).toEqual(['bob/atom/index.atom: changed: its bytes differ from what the last build wrote']);
  });

  it('names a missing file', () => {
    rmSync(join(out, 'alice', 'foaf', 'index.rdf'));
    rmSync(join(out, 'sitemap.xml'));
    const result = check();
    expect(result.code).toBe(1);
    expect(lines(result.stdout).sort()).toEqual(['alice/foaf/index.rdf: missing: the last build wrote it', 'sitemap.xml: missing: the last build wrote it']);
  });

  it('names a stray file where vidfeeds writes, and a staging folder left behind', () => {
    writeFileSync(join(out, 'alice', 'rss', 'old.rss'), '<rss/>');
    writeFileSync(join(out, 'sitemap-3.xml'), '<urlset/>');
    mkdirSync(join(out, STAGING_DIR));
    const result = check();
    expect(result.code).toBe(1);
    expect(lines(result.stdout).sort()).toEqual([
      `${STAGING_DIR}/: the staging folder of a build that was killed (the next build removes it)`,
      'alice/rss/old.rss: not written by the last build (a stray file where vidfeeds writes)',
      'sitemap-3.xml: not written by the last build, under the name of a site-wide file',
    ]);
  });

  it("names a private video's folder, and with the database says it is not published", () => {
    const [privateId] = sql(`SELECT public_id FROM videos WHERE visibility = 'private' ORDER BY id LIMIT 1`) as string[];
    const [publicId] = sql(`SELECT v.public_id FROM videos v JOIN users u ON u.id = v.user_id WHERE v.visibility = 'public' AND u.state = 'active' ORDER BY v.id LIMIT 1`) as string[];
    expect(privateId).toBeDefined();
    expect(existsSync(join(out, publicId!, 'oembed', 'index.json'))).toBe(true);
    expect(existsSync(join(out, privateId!))).toBe(false);
    cpSync(join(out, publicId!), join(out, privateId!), { recursive: true });

    const result = check();
    expect(result.code).toBe(1);
    // The oEmbed forms and the embed page, each named.
    const files = ['embed', 'oembed'].flatMap((dir) => readdirSync(join(out, privateId!, dir)).sort().map((f) => `${dir}/${f}`));
    expect(files).toContain('embed/index.html');
    expect(lines(result.stdout)).toEqual(files.map((f) => `${privateId}/${f}: not written by the last build (a stray file where vidfeeds writes)`));

    const withDb = check('--db', db);
    expect(withDb.code).toBe(1);
    expect(lines(withDb.stdout)).toContain(`${privateId}/: video documents of "${privateId}", which is not a published video in the database (private, deleted or unknown)`);
  });

  it('with the database, names a user the tree still publishes after the database withdrew them, and one it lacks', () => {
    const conn = new Database(db);
    conn.prepare(`UPDATE users SET state = 'suspended' WHERE username = 'alice'`).run();
    conn.close();
    rmSync(join(out, 'bob'), { recursive: true });
    const result = check('--db', db);
    expect(result.code).toBe(1);
    const found = lines(result.stdout);
    expect(found).toContain(`alice/: user documents of "alice", who is not a published user in the database (private, suspended, deleted or unknown)`);
    expect(found).toContain(`bob/: user "bob" is published in the database, but the tree has no document of theirs`);
    // bob's files are missing too, each named.
    expect(found).toContain('bob/rss/index.rss: missing: the last build wrote it');
  });

  it('names a recorded document that does not meet its schema', () => {
    // As if vidfeeds itself had written it: the state records these very bytes.
    const path = 'alice/xspf/index.xspf';
    const body = Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n<playlist version="1" xmlns="http://xspf.org/ns/0/"><tracklist/></playlist>\n');
    writeFileSync(join(out, path), body);
    const broken = 'alice/rss/index.rss';
    const brokenBody = Buffer.from('<rss version="2.0"><channel></rss>');
    writeFileSync(join(out, broken), brokenBody);
    const state = new Database(join(dir, '.vidfeeds', 'out.state.sqlite'));
    const record = state.prepare('UPDATE outputs SET hash = ?, size = ? WHERE path = ?');
    record.run(documentHash(body), body.length, path);
    record.run(documentHash(brokenBody), brokenBody.length, broken);
    state.close();
    const result = check();
    expect(result.code).toBe(1);
    const found = lines(result.stdout);
    expect(found).toHaveLength(2);
    expect(found[0]).toMatch(/^alice\/rss\/index\.rss: rss: not well-formed XML: line 1, column \d+: .+/);
    expect(found[1]).toMatch(/^alice\/xspf\/index\.xspf: xspf: does not meet xspf-1_0\.7\.rng: .+/);
  });

  it('prints one JSON object that meets the report schema, for a good tree, a damaged one and an error', () => {
    const good = check('--json', '--db', db);
    expect(good.code).toBe(0);
    const goodReport = JSON.parse(good.stdout);
    expect(validateReport(goodReport)).toEqual([]);
    expect(goodReport).toMatchObject({ command: 'check', ok: true, exitCode: 0, problems: [], missingSchemas: [] });
    expect(goodReport.counts.validated).toBeGreaterThan(0);

    rmSync(join(out, 'alice', 'foaf', 'index.rdf'));
    const bad = check('--json');
    expect(bad.code).toBe(1);
    const badReport = JSON.parse(bad.stdout);
    expect(validateReport(badReport)).toEqual([]);
    expect(badReport.problems).toEqual([{ file: 'alice/foaf/index.rdf', problem: 'missing: the last build wrote it' }]);

    const usage = cli(['check', '--out', join(dir, 'nowhere'), '--json']);
    expect(usage.code).toBe(2);
    const usageReport = JSON.parse(usage.stdout);
    expect(validateReport(usageReport)).toEqual([]);
    expect(usageReport.error).toContain('is not a directory');
  });

  it('exits 75 while a build of the directory runs', () => {
    // A lock held by a live process on this host: this test's own.
    const holder = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), command: 'vidfeeds build', token: 'test' };
    writeFileSync(join(dir, '.vidfeeds', 'out.lock'), JSON.stringify(holder));
    const result = check();
    expect(result.code).toBe(75);
    expect(result.stderr).toContain(`is being built by another vidfeeds: "vidfeeds build", pid ${process.pid}`);
  });

  it('exits 2 naming what is wrong: no directory, no build state', () => {
    const noDir = cli(['check', '--out', join(dir, 'nowhere')]);
    expect(noDir.code).toBe(2);
    expect(noDir.stderr).toContain('nowhere is not a directory');
    rmSync(join(dir, '.vidfeeds'), { recursive: true });
    const noState = check();
    expect(noState.code).toBe(2);
    expect(noState.stderr).toContain(`no build state at ${join(dir, '.vidfeeds', 'out.state.sqlite')}`);
  });
});
