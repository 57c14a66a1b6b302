import { describe, expect, it } from 'vitest';
import { SITE_TABLES } from '../../src/db/columns.js';
import { normaliseValue, WRONG } from '../../src/sync/sync-values.js';

/** How a source's values become vidfeeds's, column kind by column kind (docs/database.md, "Values of the wrong type"). */

const videos = SITE_TABLES.videos!.columns;

describe('source values', () => {
  it('takes an integer as a number, BigInt, or text, a DECIMAL with a zero fraction too, and nothing else', () => {
    const id = videos.id!;
    expect(normaliseValue(id, 47)).toBe(47);
    expect(normaliseValue(id, 47n)).toBe(47);
    expect(normaliseValue(id, ' 47 ')).toBe(47);
    expect(normaliseValue(id, '47.000000')).toBe(47);
    expect(normaliseValue(id, '47.')).toBe(47);
    expect(normaliseValue(id, '47.5')).toBe(WRONG);
    expect(normaliseValue(id, '47.0001')).toBe(WRONG);
    expect(normaliseValue(id, '.0')).toBe(WRONG);
    expect(normaliseValue(id, '9007199254740993')).toBe(WRONG);
    expect(normaliseValue(videos.duration_seconds!, '195.00')).toBe(195);
    expect(normaliseValue(videos.duration_seconds!, '-1.0')).toBe(WRONG);
    // A time given as whole seconds in a DECIMAL.
    expect(normaliseValue(videos.created_at!, '1262304000.000')).toBe(1_262_304_000);
  });
});
