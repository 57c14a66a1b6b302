import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildRecordName, type BuildRecord } from '../../src/pipeline/record/build-record.js';
import { DirectoryWriter } from '../../src/pipeline/write/output-writer.js';
import { cli } from '../helpers/cli.js';
import { createDemoDb, insertUser, tempDir } from '../helpers/site-fixture.js';

/** The record each build leaves in its output directory (src/pipeline/build-record.ts). */

const RECORD = buildRecordName(undefined);

describe('the build record', () => {
  it('says what a finished build read, and is removed as soon as the next build starts', () => {
    const demo = createDemoDb({ users: 12, seed: 5 });
    const { dir } = tempDir();
    const out = join(dir, 'out');
    expect(cli(['build', '--db', demo.file, '--out', out]).code).toBe(0);
    const record = JSON.parse(readFileSync(join(out, RECORD), 'utf8')) as BuildRecord;
    const position = demo.db.prepare<[], { seq: number }>(`SELECT seq FROM sqlite_sequence WHERE name = 'change_log'`).get()!.seq;
    expect(record).toMatchObject({ record: 1, shard: null, database: { position }, mode: 'full', partial: null, failed: 0, complete: true });

    const partial = cli(['build', '--db', demo.file, '--out', out, '--only', 'rss']);
    expect(partial.code).toBe(0);
    expect(JSON.parse(readFileSync(join(out, RECORD), 'utf8'))).toMatchObject({ mode: 'partial', partial: { only: ['rss'], user: null }, complete: false });

    // A name that cannot be a path: --strict stops the build midway, with exit 1, and the tree is
    // no longer what the record said.
    insertUser(demo.db, { username: '.hidden' });
    const strict = cli(['build', '--db', demo.file, '--out', out, '--full', '--strict']);
    expect(strict.code).toBe(1);
    expect(existsSync(join(out, RECORD))).toBe(false);
  });

  it('is not a document: an output directory holding only records is empty to the writer', () => {
    const { dir } = tempDir();
    writeFileSync(join(dir, RECORD), '{}');
    writeFileSync(join(dir, buildRecordName({ index: 2, count: 8 })), '{}');
    const writer = new DirectoryWriter(dir);
    expect(writer.isEmpty()).toBe(true);
    writeFileSync(join(dir, 'robots.txt'), '');
    expect(writer.isEmpty()).toBe(false);
    writer.close();
  });
});
