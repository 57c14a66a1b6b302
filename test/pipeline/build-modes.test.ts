import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BuildState, STATE_VERSION } from '../../src/pipeline/build-state.js';
import { planBuild, type PlanInput } from '../../src/pipeline/plan/incremental.js';
import { MemoryWriter } from '../../src/pipeline/write/output-writer.js';
import { buildSite, type SiteBuildRequest } from '../../src/pipeline/site-build.js';
import type { UserFormat } from '../../src/formats/format.js';
import { FORMATS } from '../../src/formats/registry.js';
import { SHIPPED_TEMPLATES_DIR } from '../../src/render/templates.js';
import { buildInMemory, createTestDb, insertUser, insertVideo, testConfig } from '../helpers/site-fixture.js';
import { readTree, treeDifferences } from '../helpers/tree.js';
import { tempDir } from '../helpers/temp-dir.js';

/** When a build is incremental, when it falls back to a full one, and what it says about it. */

function site() {
  const fixture = createTestDb();
  const alice = insertUser(fixture.db, { username: 'alice' });
  insertVideo(fixture.db, alice.id, { public_id: 'clip' });
  insertUser(fixture.db, { username: 'bob' });
  const work = tempDir('vidfeeds-modes-');
  const out = join(work.dir, 'out');
  const stateFile = join(work.dir, 'state.sqlite');
  const build = (request: Partial<SiteBuildRequest> = {}) => buildSite({ db: fixture.file, out, stateFile, config: testConfig(), ...request });
  return { ...fixture, alice, work: work.dir, out, stateFile, build };
}

describe('build modes', () => {
  it('is full the first time, then incremental, and renders only what changed', () => {
    const { db, build, out } = site();
    expect(build()).toMatchObject({ mode: 'full', reason: 'first build: no saved state' });
    expect(build()).toMatchObject({ mode: 'incremental', changes: 0, documents: 0, written: 0 });
    db.prepare(`UPDATE users SET display_name = 'Bobby' WHERE username = 'bob'`).run();
    const report = build();
    // Bob's listed documents changed, so the sitemap is rendered again for their lastmod.
    expect(report).toMatchObject({ mode: 'incremental', changes: 1, owners: { users: 1, videos: 0, siteFiles: true } });
    // Bob's documents (he has too few uploads for archive pages), and the site files.
    expect(report.documents).toBe(FORMATS.filter((f) => f.scope === 'user' && !('paged' in f && f.paged !== undefined)).length + 4);
    expect(readFileSync(join(out, 'bob/atom/index.atom'), 'utf8')).toContain('Bobby');
  });

  it('--full renders everything and keeps unchanged files untouched', () => {
    const { build, out } = site();
    build();
    const before = readTree(out);
    const report = build({ full: true });
    expect(report).toMatchObject({ mode: 'full', reason: '--full: every file is compared with its bytes on disk', written: 0 });
    expect(report.unchanged).toBe(before.size);
  });

  it('rebuilds everything into an output emptied since the last build, which following the log would leave empty', () => {
    const { build, out } = site();
    build();
    const before = readTree(out);
    rmSync(out, { recursive: true });
    const report = build();
    expect(report).toMatchObject({ mode: 'full', reason: 'the output directory holds no documents (emptied since the last build)' });
    expect(report.written).toBe(before.size);
    expect(treeDifferences(readTree(out), before)).toEqual([]);
    expect(build()).toMatchObject({ mode: 'incremental', written: 0 });
  });

  it('falls back to a full build when the configuration changed', () => {
    const { build } = site();
    build();
    expect(build({ config: testConfig({ siteName: 'Another name' }) })).toMatchObject({ mode: 'full', reason: 'the configuration changed' });
    // `strict` changes no byte of any document.
    expect(build({ config: testConfig({ siteName: 'Another name', strict: true }) }).mode).toBe('incremental');
  });

  it('falls back to a full build when a template changed', () => {
    const { build, work } = site();
    const templates = join(work, 'templates');
    cpSync(SHIPPED_TEMPLATES_DIR, templates, { recursive: true });
    const config = testConfig({ player: { ...testConfig().player, templatesDir: templates } });
    build({ config });
    expect(build({ config }).mode).toBe('incremental');
    const file = join(templates, 'embed', `${config.player.template}.hbs`);
    writeFileSync(file, `${readFileSync(file, 'utf8')}\n`);
    expect(build({ config })).toMatchObject({ mode: 'full', reason: 'a template changed' });
  });

  it('falls back to a full build when the format table changed', () => {
    const { build } = site();
    build();
    const extra: UserFormat = {
      name: 'extra', scope: 'user', dir: 'extra', file: 'index.txt', urlName: '', mediaType: 'text/plain; charset=utf-8',
      inSitemap: false, summary: 'test', cacheClass: 'feeds', needs: [], render: ({ user }) => user.username,
    };
    expect(build({ formats: [...FORMATS, extra] })).toMatchObject({ mode: 'full', reason: 'the format table changed' });
  });

  it('falls back to a full build from a state of another version, removing what that state says earlier builds wrote', () => {
    const { build, stateFile, out } = site();
    build();
    mkdirSync(join(out, 'gone'), { recursive: true });
    writeFileSync(join(out, 'gone/index.rss'), 'old');
    // A state file of version 1: the layout before owners were recorded.
    const old = new Database(stateFile);
    old.exec(`DROP TABLE outputs; CREATE TABLE outputs (path TEXT PRIMARY KEY, format TEXT NOT NULL, user TEXT, hash BLOB NOT NULL,
      size INTEGER NOT NULL, build INTEGER NOT NULL); DELETE FROM meta; INSERT INTO meta VALUES ('state_version', '1');
      INSERT INTO outputs VALUES ('gone/index.rss', 'rss', 'gone', x'00', 3, 1);`);
    old.close();
    const report = build();
    expect(report).toMatchObject({ mode: 'full', reason: `the saved state is of version 1 (this vidfeeds keeps version ${STATE_VERSION})` });
    expect(readTree(out).has('gone/index.rss')).toBe(false);
    expect(build().mode).toBe('incremental');
  });

  it('from a state of version 2, whose hashes are SHA-1s, compares each document with the disk and rewrites none', () => {
    const { build, stateFile, out } = site();
    build();
    const before = readTree(out);
    const old = new Database(stateFile);
    const sha1 = old.prepare('UPDATE outputs SET hash = ? WHERE path = ?');
    for (const [path, file] of before) sha1.run(createHash('sha1').update(file.body).digest(), path);
    old.exec(`UPDATE meta SET value = '2' WHERE key = 'state_version'; DELETE FROM meta WHERE key = 'document_hash';`);
    old.close();
    const report = build();
    // A record carried over from another layout has no change time: the sitemap dates its
    // documents by this build, once; every document is left as it was.
    expect(report).toMatchObject({ mode: 'full', reason: `the saved state is of version 2 (this vidfeeds keeps version ${STATE_VERSION})` });
    expect(report.written).toBeLessThanOrEqual(1);
    expect(report.unchanged).toBeGreaterThanOrEqual(before.size - 1);
    const upgraded = readTree(out);
    for (const [path, file] of before) if (path !== 'sitemap.xml') expect(upgraded.get(path), path).toEqual(file);
    expect(build()).toMatchObject({ mode: 'incremental', written: 0 });
  });

  it('falls back to a full build when the database is another one, or its log was pruned past the saved position', () => {
    const { build, db, file, stateFile, out } = site();
    build();
    db.prepare(`UPDATE users SET display_name = 'X' WHERE username = 'bob'`).run();
    db.exec('DELETE FROM change_log');
    expect(build().reason).toMatch(/^the change log was pruned past the saved position \d+$/);

    const other = createTestDb();
    insertUser(other.db, { username: 'carol' });
    const report = buildSite({ db: other.file, out, stateFile, config: testConfig() });
    expect(report).toMatchObject({ mode: 'full', reason: 'the database is another one (its database_id differs)' });
    expect([...readTree(out).keys()].filter((p) => p.startsWith('alice/'))).toEqual([]);
    expect(file).not.toBe(other.file);
  });

  it('after an interrupted build, checks every file against its bytes on disk', () => {
    const { build, stateFile, out } = site();
    build();
    // A build killed after writing a file but before its record was committed: same size, other bytes.
    const path = join(out, 'alice/rss/index.rss');
    const good = readFileSync(path);
    writeFileSync(path, Buffer.alloc(good.length, 'x'));
    const state = new BuildState(stateFile);
    state.setMeta('in_progress', '2026-01-01T00:00:00Z');
    state.close();
    const report = build();
    expect(report).toMatchObject({ mode: 'full', written: 1 });
    expect(report.reason).toContain('the last build did not finish');
    expect(readFileSync(path).equals(good)).toBe(true);
    expect(build().mode).toBe('incremental');
  });

  it('a partial build keeps the change position: the next build applies what it did not', () => {
    const { build, db, out } = site();
    build();
    db.prepare(`UPDATE users SET display_name = 'Bobby' WHERE username = 'bob'`).run();
    db.prepare(`UPDATE users SET display_name = 'Alicia' WHERE username = 'alice'`).run();
    const partial = build({ user: 'alice' });
    expect(partial.mode).toBe('partial');
    expect(partial.reason).toBe('--user alice; the change log position is kept for the next build');
    expect(readFileSync(join(out, 'bob/atom/index.atom'), 'utf8')).not.toContain('Bobby');
    const next = build();
    expect(next).toMatchObject({ mode: 'incremental', changes: 2 });
    expect(readFileSync(join(out, 'bob/atom/index.atom'), 'utf8')).toContain('Bobby');
  });

  it('a build with failed documents applies its changes again next time', () => {
    const { build, db } = site();
    const fragile: UserFormat = {
      name: 'fragile', scope: 'user', dir: 'fragile', file: 'index.txt', urlName: '', mediaType: 'text/plain; charset=utf-8',
      inSitemap: false, summary: 'test', cacheClass: 'feeds', needs: [],
      render: ({ user }) => {
        if (user.displayName.includes('BOOM')) throw new Error('cannot render BOOM');
        return user.displayName;
      },
    };
    const formats = [...FORMATS, fragile];
    build({ formats });
    db.prepare(`UPDATE users SET display_name = 'BOOM' WHERE username = 'bob'`).run();
    expect(build({ formats }).failed).toHaveLength(1);
    db.prepare(`UPDATE users SET display_name = 'fine' WHERE username = 'bob'`).run();
    const retried = build({ formats });
    expect(retried).toMatchObject({ mode: 'incremental', changes: 2, failed: [] });
  });
});

/** A MemoryWriter that counts the files it was asked to compare with what it holds. */
class CountingWriter extends MemoryWriter {
  compared = 0;
  override holds(path: string, body: Buffer): boolean {
    this.compared++;
    return super.holds(path, body);
  }
}

describe('comparing with the disk', () => {
  it('a first build into an empty output compares nothing; with its state lost, it compares every file and rewrites none', () => {
    const { file } = site();
    const writer = new CountingWriter();
    const first = buildInMemory(file, { writer });
    expect(first.report.written).toBeGreaterThan(0);
    expect(writer.compared).toBe(0);
    // A fresh state beside a full tree: every document is held to the bytes there.
    const again = buildInMemory(file, { writer });
    expect(writer.compared).toBe(first.report.documents);
    expect(again.report).toMatchObject({ written: 0, unchanged: first.report.documents });
  });
});

describe('planBuild', () => {
  const basis = { vidfeedsVersion: '1.0.0', codeHash: 'k', configHash: 'c', formatsHash: 'f', templatesHash: 't', databaseId: 'db', position: 10 };
  const input = (patch: Partial<PlanInput> = {}): PlanInput => ({
    state: { basis, basisDropped: null, interrupted: false, replacedVersion: null, empty: false, outputEmpty: false },
    fingerprint: { vidfeedsVersion: '1.0.0', codeHash: 'k', configHash: 'c', formatsHash: 'f', templatesHash: 't' },
    log: { databaseId: 'db', position: 12, oldest: 3 },
    options: {},
    ...patch,
  });

  it('follows from the saved position when everything matches', () => {
    expect(planBuild(input())).toMatchObject({ mode: 'incremental', from: 10 });
  });

  it('names why it cannot', () => {
    expect(planBuild(input({ fingerprint: { ...input().fingerprint!, vidfeedsVersion: '1.1.0' } })).reason).toBe('vidfeeds changed from 1.0.0 to 1.1.0');
    expect(planBuild(input({ fingerprint: { ...input().fingerprint!, codeHash: 'k2' } })).reason).toBe('the code of vidfeeds 1.0.0 changed');
    expect(planBuild(input({ log: { databaseId: 'db', position: 5, oldest: 1 } })).reason).toMatch(/before the saved position 10/);
    expect(planBuild(input({ log: { databaseId: 'db', position: 12, oldest: 12 } })).reason).toBe('the change log was pruned past the saved position 10');
    expect(planBuild(input({ state: { ...input().state, basis: null, basisDropped: 'the last full build had 2 failed documents' } })).reason).toBe(
      'the last full build had 2 failed documents',
    );
    expect(planBuild(input({ log: undefined })).reason).toBe('no change log to follow');
  });

  it('is full when the output holds no documents but the state records some', () => {
    expect(planBuild(input({ state: { ...input().state, outputEmpty: true } }))).toMatchObject({
      mode: 'full',
      reason: 'the output directory holds no documents (emptied since the last build)',
    });
    // A first build: nothing recorded, nothing on disk.
    expect(planBuild(input({ state: { ...input().state, basis: null, empty: true, outputEmpty: true } })).reason).toBe('first build: no saved state');
  });

  it('a log pruned up to the saved position is still enough', () => {
    expect(planBuild(input({ log: { databaseId: 'db', position: 12, oldest: 11 } })).mode).toBe('incremental');
    expect(planBuild(input({ log: { databaseId: 'db', position: 10, oldest: null } })).mode).toBe('incremental');
  });
});
