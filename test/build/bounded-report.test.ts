import { afterEach, describe, expect, it } from 'vitest';
import { REPORT_KEEPS } from '../../src/build/build-report.js';
import { summary } from '../../src/cli/commands/build.js';
import { buildInMemory, createTestDb, insertUser } from '../helpers/site-fixture.js';

/** A build keeps a bounded amount per problem row, however many there are (docs/performance.md). */

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!();
});

describe('build report', () => {
  it('keeps the first skipped rows and counts all of them', () => {
    const f = createTestDb();
    cleanups.push(f.cleanup);
    const bad = REPORT_KEEPS + 37;
    for (let i = 0; i < bad; i++) insertUser(f.db, { username: `bad/name${i}` });
    insertUser(f.db, { username: 'fine' });
    const { report, writer } = buildInMemory(f.file, { only: new Set(['rss']) });
    expect(report.skipped).toHaveLength(REPORT_KEEPS);
    expect(report.skippedCount).toBe(bad);
    expect(report.skipped[0]).toMatchObject({ kind: 'user', reason: 'contains "/"', isName: true });
    expect(summary(report)).toContain(`${bad} skipped`);
    expect([...writer.files.keys()]).toEqual(['fine/rss/index.rss']);
  });
});
