import { describe, expect, it } from 'vitest';
import { deferRows, readIntegerKey } from '../../src/sync/mysql-row-digest.js';

/**
 * The key of a MySQL text-protocol row read from its bytes (src/sync/mysql-row-digest.ts): each
 * value its length (one byte, or 0xfc, 0xfd, 0xfe and two, three, eight bytes), then its text;
 * NULL the byte 0xfb. A key that is not plain integer text gives null: the row is then parsed by
 * the driver, whose numbers the fast path must equal.
 */

const NULL = Symbol('NULL');

/** A row's bytes as the server sends them (without the packet's header). */
function row(...values: Array<string | typeof NULL>): Buffer {
  const parts: Buffer[] = [];
  for (const value of values) {
    if (value === NULL) {
      parts.push(Buffer.from([0xfb]));
      continue;
    }
    const text = Buffer.from(value, 'utf8');
    const n = text.length;
    const head =
      n < 251 ? Buffer.from([n]) : n < 0x1_0000 ? Buffer.from([0xfc, n & 0xff, n >> 8]) : n < 0x100_0000 ? Buffer.from([0xfd, n & 0xff, (n >> 8) & 0xff, n >> 16]) : Buffer.alloc(0);
    parts.push(head, text);
  }
  return Buffer.concat(parts);
}

/** A row of one value whose length takes eight bytes (the text itself short: only the form is read). */
function eightByteLength(text: string): Buffer {
  const head = Buffer.alloc(9);
  head[0] = 0xfe;
  head.writeUInt32LE(text.length, 1);
  return Buffer.concat([head, Buffer.from(text)]);
}

const key = (bytes: Buffer, columns: number[]) => readIntegerKey(bytes, 0, bytes.length, columns, Math.max(...columns));

describe("a MySQL row's key read from its bytes", () => {
  it('reads integer keys after values of every length form, in the order of the keys', () => {
    expect(key(row('12', 'title'), [0])).toEqual([12]);
    expect(key(row('title', NULL, '-5'), [2])).toEqual([-5]);
    expect(key(row('x'.repeat(300), '7'), [1])).toEqual([7]);
    expect(key(row('y'.repeat(70_000), '0'), [1])).toEqual([0]);
    expect(key(Buffer.concat([eightByteLength('abc'), row('42')]), [1])).toEqual([42]);
    expect(key(row('3', 'a', '999999999999999'), [2, 0])).toEqual([999_999_999_999_999, 3]);
  });

  it('gives null for a key the driver must read: NULL, leading zeros, -0, past 15 digits, not digits, a short row', () => {
    expect(key(row(NULL, 'a'), [0])).toBeNull();
    expect(key(row('0012'), [0])).toBeNull();
    expect(key(row('-0'), [0])).toBeNull();
    expect(key(row('1234567890123456'), [0])).toBeNull();
    expect(key(row('12a'), [0])).toBeNull();
    expect(key(row('+3'), [0])).toBeNull();
    expect(key(row(''), [0])).toBeNull();
    expect(key(row('-'), [0])).toBeNull();
    expect(key(row('1'), [1])).toBeNull();
    const cut = row('1', '12345');
    expect(readIntegerKey(cut, 0, cut.length, [0, 1], 1)).toEqual([1, 12_345]);
    expect(readIntegerKey(cut, 0, cut.length - 2, [0, 1], 1)).toBeNull();
  });
});

describe('deferRows', () => {
  it("leaves a query whose class reads no first row with `row` (another mysql2) as it is: its rows come as the driver makes them", () => {
    let listeners = 0;
    const query = { on: () => listeners++, _rowParser: null };
    deferRows(query, [1, 2], ['id']);
    expect(listeners).toBe(1);
    expect(Object.keys(query)).toEqual(['on', '_rowParser']);
  });
});
