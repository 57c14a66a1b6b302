import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildRecordName, type BuildRecord, type FoundRecord } from '../../src/pipeline/record/build-record.js';
import { checkShards } from '../../src/pipeline/record/shard-check.js';
import { shardOf } from '../../src/shard/shard.js';
import { cli } from '../helpers/cli.js';
import { createDemoDb, insertUser } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * `vidfeeds shards check` as an operator runs it before merging the parts of a sharded build: real
 * builds of a small demo database by the built command, in a temporary directory.
 */

function site() {
  const demo = createDemoDb({ users: 20, seed: 5 });
  const { dir } = tempDir('vidfeeds-shards-');
  const build = (part: string, out = `part${part.split('/')[0]}`, ...extra: string[]) => {
    const result = cli(['build', '--db', demo.file, '--out', join(dir, out), '--shard', part, ...extra]);
    expect(result.code, result.stderr).toBe(0);
  };
  const check = (...dirs: string[]) => cli(['shards', 'check', ...dirs], { cwd: dir });
  const position = () => demo.db.prepare<[], { seq: number }>(`SELECT seq FROM sqlite_sequence WHERE name = 'change_log'`).get()!.seq;
  const databaseId = () => demo.db.prepare<[], { value: string }>(`SELECT value FROM site_meta WHERE key = 'database_id'`).get()!.value;
  return { demo, dir, build, check, position, databaseId };
}

function readRecord(dir: string, name: string): BuildRecord {
  return JSON.parse(readFileSync(join(dir, name), 'utf8')) as BuildRecord;
}

describe('vidfeeds shards check', () => {
  it('passes three parts of one snapshot, in three directories or merged into one (exit 0, one line)', () => {
    const s = site();
    for (const k of [1, 2, 3]) s.build(`${k}/3`);
    const record = readRecord(join(s.dir, 'part2'), '.vidfeeds-build.shard-2-of-3.json');
    expect(record).toMatchObject({
      record: 1,
      shard: { index: 2, count: 3 },
      database: { id: s.databaseId(), position: s.position() },
      mode: 'full',
      partial: null,
      failed: 0,
      complete: true,
    });
    expect(record.documents).toBeGreaterThan(0);
    expect(Number.isNaN(Date.parse(record.finishedAt))).toBe(false);

    const ok = s.check('part1', 'part2', 'part3');
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toBe('');
    expect(ok.stderr.trim().split('\n')).toEqual([
      `vidfeeds: all 3 parts agree: database ${s.databaseId()} at change log position ${s.position()}, vidfeeds ${record.fingerprint.vidfeedsVersion}, ` +
        'one configuration, format table and templates; each part built whole without failures',
    ]);

    // Merged into one directory, the records keep apart: each part's carries its name.
    const merged = join(s.dir, 'merged');
    for (const k of [1, 2, 3]) cpSync(join(s.dir, `part${k}`), merged, { recursive: true });
    expect(s.check('merged').code).toBe(0);
    // An incremental build with nothing to do keeps the parts in agreement.
    s.build('2/3');
    expect(s.check('part1', 'part2', 'part3').code).toBe(0);
  });

  it('fails when one part was rebuilt after a database change, naming it and both positions', () => {
    const s = site();
    for (const k of [1, 2, 3]) s.build(`${k}/3`);
    const before = s.position();
    // A new user in part 2: its files and shard 1's sitemap would disagree once merged.
    const name = Array.from({ length: 50 }, (_, i) => `late${i}`).find((n) => shardOf(n, 3) === 2)!;
    insertUser(s.demo.db, { username: name });
    const after = s.position();
    expect(after).toBeGreaterThan(before);
    s.build('2/3');

    const result = s.check('part1', 'part2', 'part3');
    expect(result.code).toBe(1);
    expect(result.stdout.trim().split('\n')).toEqual([
      'the parts read different snapshots of the database (change log positions differ): ' +
        `position ${before}: part 1/3 (part1), part 3/3 (part3); position ${after}: part 2/3 (part2); rebuild them from one snapshot`,
    ]);
    expect(result.stderr).toContain('the parts do not agree: 1 problem; do not merge them');
  });

  it('fails when a part is missing', () => {
    const s = site();
    for (const k of [1, 3]) s.build(`${k}/3`);
    const result = s.check('part1', 'part3');
    expect(result.code).toBe(1);
    expect(result.stdout.trim().split('\n')).toEqual(['part 2 of 3 is missing: no directory given holds a record of it']);
  });

  it('fails when a part was built for another number of parts', () => {
    const s = site();
    for (const k of [1, 2]) s.build(`${k}/3`);
    s.build('3/4', 'part3');
    const result = s.check('part1', 'part2', 'part3');
    expect(result.code).toBe(1);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toContain('the parts belong to different splits: into 3: part 1/3 (part1), part 2/3 (part2); into 4: part 3/4 (part3)');
    expect(lines).toContain('part 3 of 3 is missing: no directory given holds a record of it');
  });

  it('fails when a part was built with another configuration', () => {
    const s = site();
    for (const k of [1, 2]) s.build(`${k}/3`);
    s.build('3/3', 'part3', '--site-name', 'Another name');
    const result = s.check('part1', 'part2', 'part3');
    expect(result.code).toBe(1);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^the parts were built with different configurations: [0-9a-f]{12}…: part 1\/3 \(part1\), part 2\/3 \(part2\); [0-9a-f]{12}…: part 3\/3 \(part3\)$/);
  });

  it('fails on a partial part, a part present twice and a directory without a record', () => {
    const s = site();
    for (const k of [1, 2, 3]) s.build(`${k}/3`);
    s.build('1/3', 'part1', '--user', 'alice', '--only', 'rss,atom');
    cpSync(join(s.dir, 'part2'), join(s.dir, 'copy'), { recursive: true });
    mkdirSync(join(s.dir, 'empty'));
    const result = s.check('part1', 'part2', 'part3', 'copy', 'empty', 'part3/');
    expect(result.code).toBe(1);
    expect(result.stdout.trim().split('\n')).toEqual([
      'empty: no build record (.vidfeeds-build*.json): the build did not finish there, was made by an older vidfeeds, or the copy left out hidden files',
      'part 2/3 is present 2 times: in copy, part2; merge only one of them',
      'part 1/3 (part1): its last build was partial (--only atom,rss --user alice), so the part may hold documents of other snapshots; build the part whole',
    ]);
    // Built whole again, the part agrees.
    s.build('1/3');
    expect(s.check('part1', 'part2', 'part3').code).toBe(0);
  });

  it('exits 2 for a directory that is not there or a record it cannot read', () => {
    const s = site();
    s.build('1/1', 'whole');
    expect(s.check('whole').code).toBe(0);
    const missing = s.check('whole', 'nowhere');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('vidfeeds: nowhere is not a directory');
    writeFileSync(join(s.dir, 'whole', '.vidfeeds-build.shard-1-of-1.json'), '{"record": 9}');
    const newer = s.check('whole');
    expect(newer.code).toBe(2);
    expect(newer.stderr).toContain('a build record of version 9, this vidfeeds reads version 1');
    expect(s.check().code).toBe(2);
  });
});

describe('checkShards', () => {
  const record = (index: number, fields: Partial<BuildRecord> = {}): FoundRecord => ({
    dir: `part${index}`,
    file: `part${index}/${buildRecordName({ index, count: 2 })}`,
    record: {
      record: 1,
      shard: { index, count: 2 },
      database: { id: 'db1', position: 7 },
      fingerprint: { vidfeedsVersion: '0.1.0', codeHash: 'k'.repeat(64), configHash: 'c'.repeat(64), formatsHash: 'f'.repeat(64), templatesHash: 't'.repeat(64) },
      mode: 'full',
      partial: null,
      documents: 10,
      failed: 0,
      skipped: 0,
      complete: true,
      finishedAt: '2026-01-01T00:00:00.000Z',
      ...fields,
    },
  });

  it('names a part whose build had failed documents', () => {
    const result = checkShards([record(1), record(2, { failed: 3, complete: false })], []);
    expect(result.problems).toEqual(['part 2/2 (part2): its last build had 3 failed documents; fix them and build the part again']);
  });

  it('names the databases when the parts read different ones', () => {
    const result = checkShards([record(1), record(2, { database: { id: 'db2', position: 7 } })], []);
    expect(result.problems).toEqual([
      'the parts read different databases: database db1 at change log position 7: part 1/2 (part1); database db2 at change log position 7: part 2/2 (part2); build every part from one copy of one database',
    ]);
  });

  it('names the versions and templates when they differ', () => {
    const other = { ...record(2).record.fingerprint, vidfeedsVersion: '0.2.0', templatesHash: 'a'.repeat(64) };
    expect(checkShards([record(1), record(2, { fingerprint: other })], []).problems).toEqual([
      'the parts were built with different vidfeeds versions: 0.1.0: part 1/2 (part1); 0.2.0: part 2/2 (part2)',
      `the parts were built with different templates: ${'t'.repeat(12)}…: part 1/2 (part1); ${'a'.repeat(12)}…: part 2/2 (part2)`,
    ]);
  });
});
