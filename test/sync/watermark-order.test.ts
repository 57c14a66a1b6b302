import { describe, expect, it } from 'vitest';
import { compareMarks, type StoredMark } from '../../src/sync/watermark-state.js';

/**
 * The order `sync --changed-only` puts two watermarks of one column in, to tell a source that went
 * back (restored from a backup: compare in full) from one that moved on. MySQL and PostgreSQL hand
 * over BIGINT and DECIMAL values as text: ordered as text, `10.25` would come before `9.50` and
 * every sync that crossed a power of ten would compare its tables in full.
 */

const text = (value: string): StoredMark => ({ type: 'string', value });

describe('watermark order', () => {
  it('orders decimal text by value, whatever the digits on either side of the point', () => {
    expect(compareMarks(text('10.25'), text('9.50'))).toBe(1);
    expect(compareMarks(text('9.50'), text('10.25'))).toBe(-1);
    expect(compareMarks(text('9.5'), text('9.50'))).toBe(0);
    expect(compareMarks(text('9.05'), text('9.5'))).toBe(-1);
    expect(compareMarks(text('-0.5'), text('0.25'))).toBe(-1);
    expect(compareMarks(text('-10'), text('-9.99'))).toBe(-1);
    // Beyond a double's 53 bits, exactly.
    expect(compareMarks(text('9007199254740993.1'), text('9007199254740993.01'))).toBe(1);
    expect(compareMarks({ type: 'bigint', value: '100' }, text('99.999'))).toBe(1);
  });

  it('orders other text as text (dates as the drivers give them), and numbers as numbers', () => {
    expect(compareMarks(text('2024-01-02 00:00:00'), text('2024-01-01 23:59:59'))).toBe(1);
    expect(compareMarks(text('2024-01-01T00:00:00.000Z'), text('2024-01-01T00:00:00.000Z'))).toBe(0);
    expect(compareMarks({ type: 'number', value: '1e21' }, { type: 'number', value: '9e20' })).toBe(1);
  });
});
