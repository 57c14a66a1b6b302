import { describe, expect, it } from 'vitest';
import { SITE_TABLES } from '../../src/db/columns.js';
import { shapeRow } from '../../src/sync/source-row.js';
import { describeSourceValue, firstInvalidUtf8, normaliseValue, WRONG } from '../../src/sync/sync-values.js';
import type { TablePlan } from '../../src/sync/table-plan.js';

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

  it('reads date text as PostgreSQL spells it in any session time zone, and years before 100 as themselves', () => {
    const createdAt = videos.created_at!;
    // Africa/Monrovia until 1972: an offset with seconds.
    expect(normaliseValue(createdAt, '1971-06-01 11:15:30-00:44:30')).toBe(Date.UTC(1971, 5, 1, 12) / 1000);
    expect(normaliseValue(createdAt, '1971-06-01 11:15:30.25-004430')).toBe(Date.UTC(1971, 5, 1, 12) / 1000);
    // Pacific/Chatham: the last hours of 9999 in UTC are in the year 10000 there.
    expect(normaliseValue(createdAt, '10000-01-01 09:45:00+13:45')).toBe(Date.UTC(9999, 11, 31, 20) / 1000);
    expect(normaliseValue(createdAt, '10000-01-01 00:00:00+00')).toBe(WRONG);
    // The year 99, not 1999 (Date.UTC's reading of two-digit years).
    expect(normaliseValue(createdAt, '0099-06-01')).toBe(WRONG);
    expect(normaliseValue(createdAt, '0070-01-01 00:00:00')).toBe(WRONG);
    expect(normaliseValue(createdAt, '1969-12-31 20:00:00-04')).toBe(0);
  });

  it('takes a time with a fraction of a second as the second it falls in, as from date text', () => {
    const createdAt = videos.created_at!;
    expect(normaliseValue(createdAt, '1262304000.999999')).toBe(1_262_304_000);
    expect(normaliseValue(createdAt, '2010-01-01 00:00:00.999999')).toBe(1_262_304_000);
    // Cut at the point: through a double, this one would round up to the next second.
    expect(normaliseValue(createdAt, '1262304000.99999999999')).toBe(1_262_304_000);
    expect(normaliseValue(createdAt, 1262304000.5)).toBe(1_262_304_000);
    expect(normaliseValue(createdAt, '-0.5')).toBe(WRONG);
    expect(normaliseValue(createdAt, -0.5)).toBe(WRONG);
    expect(normaliseValue(createdAt, Number.NaN)).toBe(WRONG);
    expect(normaliseValue(createdAt, '253402300799.9')).toBe(253_402_300_799);
    expect(normaliseValue(createdAt, '253402300800.0001')).toBe(WRONG);
    // A duration or a size is still a whole number.
    expect(normaliseValue(videos.duration_seconds!, '195.5')).toBe(WRONG);
  });

  it('shows a text or a JSON value with what a terminal would act on, or that reorders a line, escaped', () => {
    expect(describeSourceValue('evil\u202e\u009b2Jtitle')).toBe('text "evil\\u202e\\u009b2Jtitle"');
    expect(describeSourceValue({ note: 'a\u2028b' })).toBe('an object {"note":"a\\u2028b"}');
    expect(describeSourceValue('plain ünïcödé')).toBe('text "plain ünïcödé"');
  });

  it('shows bytes that are not UTF-8 in hex around the first bad one, however long the value', () => {
    expect(describeSourceValue(Buffer.from('Jo\u00e3o'))).toBe('5 bytes');
    expect(describeSourceValue(Buffer.from([0x42, 0x61, 0x64, 0xff]))).toBe('4 bytes (not UTF-8 at offset 3: 42 61 64 [FF])');
    // A character cut short: the sequence is named where it starts.
    expect(describeSourceValue(Buffer.from([0x43, 0x61, 0xc3]))).toBe('3 bytes (not UTF-8 at offset 2: 43 61 [C3])');
    const long = Buffer.concat([Buffer.from('a'.repeat(100)), Buffer.from([0xc0, 0xaf]), Buffer.from('b'.repeat(100))]);
    expect(describeSourceValue(long)).toBe('202 bytes (not UTF-8 at offset 100: … 61 61 61 61 61 61 61 61 [C0] AF 62 62 62 62 62 62 62 …)');
  });

  it('names arrays and objects a driver returns with a short view of them, not only their JavaScript type', () => {
    expect(describeSourceValue([1, 'two', null])).toBe('an array [1,"two",null]');
    expect(describeSourceValue({ hours: 1, minutes: 30 })).toBe('an object {"hours":1,"minutes":30}');
    class PostgresInterval { days = 3; }
    expect(describeSourceValue(new PostgresInterval())).toBe('an object (PostgresInterval) {"days":3}');
    expect(describeSourceValue({ big: 12n, text: 'x'.repeat(60) })).toBe(`an object {"big":"12","text":"${'x'.repeat(20)}…`);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(describeSourceValue(cycle)).toBe('an object');
  });

  it('finds a value not UTF-8 exactly where a strict decoder fails it', () => {
    const strict = new TextDecoder('utf-8', { fatal: true });
    const edges = [0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xff];
    let seed = 1;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let n = 0; n < 20_000; n++) {
      const bytes = Uint8Array.from({ length: 1 + (next() % 6) }, () => edges[next() % edges.length]!);
      let valid = true;
      try {
        strict.decode(bytes);
      } catch {
        valid = false;
      }
      expect(firstInvalidUtf8(bytes) === -1, Buffer.from(bytes).toString('hex')).toBe(valid);
    }
  });
});

describe('a media type from the source', () => {
  const fileType = videos.file_type!;

  it('is stored without the white space around it (a CHAR column pads it), and text of another form is wrong', () => {
    expect(normaliseValue(fileType, 'video/mp4')).toBe('video/mp4');
    expect(normaliseValue(fileType, 'video/mp4      ')).toBe('video/mp4');
    expect(normaliseValue(fileType, Buffer.from('video/webm; codecs="vp9"'))).toBe('video/webm; codecs="vp9"');
    for (const wrong of ['mp4', '', '   ', 'video/mp4" onload="x', 'video/', 42]) expect(normaliseValue(fileType, wrong), String(wrong)).toBe(WRONG);
  });

  it('that is wrong is stored as application/octet-stream, what the documents show in its place, and named; so is one that decoding entities spoils', () => {
    const plan: TablePlan = {
      table: 'videos',
      query: '',
      keys: ['id'],
      columns: ['id', 'file_type'],
      specs: [videos.id!, fileType],
      decode: new Set([1]),
      references: new Map(),
      watermark: null,
    };
    const shape = (type: unknown) => shapeRow(plan, { id: 7, file_type: type }, () => 'id=7');
    expect(shape('video/mp4')).toEqual({ values: [7, 'video/mp4'], issues: [] });
    expect(shape('video/mp4; codecs=&quot;avc1&quot;')).toEqual({ values: [7, 'video/mp4; codecs="avc1"'], issues: [] });
    for (const wrong of ['mp4', 'video/mp4&quot; onload=&quot;x']) {
      expect(shape(wrong), wrong).toEqual({
        values: [7, 'application/octet-stream'],
        issues: [expect.objectContaining({ column: 'file_type', outcome: 'stored as "application/octet-stream" (the field is left out)' })],
      });
    }
  });
});
