import { describe, expect, it } from 'vitest';
import { REPORT_KEEPS } from '../../src/pipeline/build-report.js';
import { summaryText } from '../../src/cli/commands/build.js';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { buildInMemory, createTestDb, insertUser } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * A build keeps a bounded amount per problem row in memory, however many there are
 * (docs/performance.md), and names every one of them as it happens.
 */

describe('build report', () => {
  it('keeps the first skipped rows and counts all of them', () => {
    const f = createTestDb();
    const bad = REPORT_KEEPS + 37;
    for (let i = 0; i < bad; i++) insertUser(f.db, { username: `bad/name${i}` });
    insertUser(f.db, { username: 'fine' });
    const { report, writer } = buildInMemory(f.file, { only: new Set(['rss']) });
    expect(report.skipped).toHaveLength(REPORT_KEEPS);
    expect(report.skippedCount).toBe(bad);
    expect(report.skipped[0]).toMatchObject({ kind: 'user', reason: 'contains "/"', isName: true });
    expect(summaryText(report)).toContain(`${bad} skipped`);
    expect([...writer.files.keys()]).toEqual(['fine/rss/index.rss']);
  });

  it('names every skipped row on stderr from the command line, however many', () => {
    const f = createTestDb();
    const bad = REPORT_KEEPS + 21;
    for (let i = 0; i < bad; i++) insertUser(f.db, { username: `bad/name${i}` });
    f.db.close();
    const out = join(tempDir().dir, 'out');
    const result = cli(['build', '--db', f.file, '--out', out, '--only', 'rss']);
    expect(result.code, result.stderr).toBe(0);
    const named = result.stderr.split('\n').filter((line) => line.startsWith('vidfeeds: skipped user "bad/name'));
    expect(new Set(named).size).toBe(bad);
    expect(result.stderr).toContain(`${bad} skipped`);
  });
});
