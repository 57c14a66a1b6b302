import { escapedUnshowable, quoted } from '../config/shown-text.js';
import { MAX_UNIX_SECONDS, type ColumnSpec } from '../db/columns.js';
import { isMediaType } from '../render/media-type.js';

/**
 * Values as the source's driver returns them, made into what vidfeeds's database stores, before
 * they are compared with its rows: a row is rewritten only when a value really differs, never
 * because a driver spelled the same value another way. The drivers give BIGINT and DECIMAL as
 * strings (or BigInt from SQLite), dates as text (`2009-04-01 12:00:00`, zero dates
 * `0000-00-00 00:00:00`, with or without a zone), booleans, BIT and BLOB columns as bytes.
 *
 * What each column must hold is src/db/columns.ts, the same description `build` reads by: a
 * value that cannot be one is `WRONG`, and the caller applies the column's rule.
 */

export type StoredValue = number | string | null;

/** A value that is not of its column's kind, whatever the driver's spelling. */
export const WRONG: unique symbol = Symbol('wrong value');

/** An integer, also as a DECIMAL with a zero fraction (`47.000000`, from `extract(epoch ...)` or a DECIMAL column). */
const INTEGER_TEXT = /^[+-]?\d+(\.0*)?$/;
/** Seconds with a fraction, cut at the point (not through a double, which would round `.9999999999` up to the next second). */
const FRACTION_TEXT = /^\+?\d+\.\d+$/;
const DECIMAL_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
/**
 * `YYYY-MM-DD`, optionally `[ T]HH:MM[:SS[.fraction]]`, optionally `Z` or `±HH[:MM[:SS]]`. As
 * PostgreSQL spells a `timestamptz` in any session time zone: a year of five digits (the last
 * hours of 9999 in UTC are in 10000 east of it), an offset with seconds (Africa/Monrovia's
 * -00:44:30 until 1972).
 */
const DATE_TEXT = /^(\d{4,5})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?\s*(Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)?$/i;
/** No time in a year before it is 1970 or later in UTC (offsets reach 14 hours); Date.UTC would read the years 0 to 99 as 1900 to 1999. */
const FIRST_YEAR = 1969;
const UTF8 = new TextDecoder('utf-8', { fatal: true });
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** The value to store for `raw` in a column of `spec`, or `WRONG`. NULL stays NULL here; the caller checks nullability. */
export function normaliseValue(spec: ColumnSpec, raw: unknown): StoredValue | typeof WRONG {
  if (raw === null || raw === undefined) return spec.nullable ? null : WRONG;
  switch (spec.kind) {
    case 'id':
    case 'ref':
      return integerOf(raw);
    case 'count':
      return atLeast(integerOf(raw), 0);
    case 'dimension':
      return atLeast(integerOf(raw), 1);
    case 'flag':
      return flagOf(raw);
    case 'time':
      return timeOf(raw);
    case 'fraction': {
      const n = numberOf(raw);
      return n !== WRONG && n >= 0 && n <= 1 ? n : WRONG;
    }
    case 'enum': {
      const text = textOf(raw);
      return text !== WRONG && spec.values!.includes(text) ? text : WRONG;
    }
    case 'text':
    case 'url':
    case 'name':
      return textOf(raw);
    case 'mediaType':
      return mediaTypeOf(raw);
  }
}

/** Whether a stored value equals a normalised one: SQLite gives back what was stored, so identity suffices. */
export function sameValue(stored: unknown, value: StoredValue): boolean {
  return stored === value || (typeof stored === 'bigint' && Number(stored) === value);
}

function integerOf(raw: unknown): number | typeof WRONG {
  if (typeof raw === 'number') return Number.isSafeInteger(raw) ? raw : WRONG;
  if (typeof raw === 'bigint') return raw >= MIN_SAFE && raw <= MAX_SAFE ? Number(raw) : WRONG;
  if (typeof raw === 'string' && INTEGER_TEXT.test(raw.trim())) {
    const n = Number(raw.trim());
    return Number.isSafeInteger(n) ? n : WRONG;
  }
  return WRONG;
}

function atLeast(n: number | typeof WRONG, min: number): number | typeof WRONG {
  return n !== WRONG && n >= min ? n : WRONG;
}

function numberOf(raw: unknown): number | typeof WRONG {
  if (typeof raw === 'number') return Number.isFinite(raw) ? raw : WRONG;
  if (typeof raw === 'bigint') return integerOf(raw);
  if (typeof raw === 'string' && DECIMAL_TEXT.test(raw.trim())) return Number(raw.trim());
  return WRONG;
}

/** 0 or 1 from a number, a boolean (PostgreSQL), a BIT(1) byte (MySQL) or their text. */
function flagOf(raw: unknown): number | typeof WRONG {
  if (typeof raw === 'boolean') return raw ? 1 : 0;
  if (Buffer.isBuffer(raw) && raw.length === 1 && raw[0]! <= 1) return raw[0]!;
  const n = integerOf(raw);
  return n === 0 || n === 1 ? n : WRONG;
}

/**
 * Unix seconds from a number, a Date, or date text; text without a zone is UTC. Zero dates are
 * wrong. A fraction of a second is dropped, as from a date's text: the second the time falls in
 * (`UNIX_TIMESTAMP()` of a `DATETIME(6)` and `extract(epoch FROM ...)` of a time with microseconds
 * give `1425204000.999999`, as text or, before PostgreSQL 14, a double).
 */
export function timeOf(raw: unknown): number | typeof WRONG {
  let seconds: number | typeof WRONG = WRONG;
  const text = typeof raw === 'string' ? raw.trim() : undefined;
  if (raw instanceof Date) seconds = Number.isNaN(raw.getTime()) ? WRONG : Math.floor(raw.getTime() / 1000);
  else if (typeof raw === 'number') seconds = Number.isFinite(raw) ? integerOf(Math.floor(raw)) : WRONG;
  else if (text !== undefined && FRACTION_TEXT.test(text)) seconds = integerOf(text.slice(0, text.indexOf('.')));
  else if (text !== undefined && !INTEGER_TEXT.test(text)) seconds = dateTextSeconds(text);
  else seconds = integerOf(raw);
  return seconds !== WRONG && seconds >= 0 && seconds <= MAX_UNIX_SECONDS ? seconds : WRONG;
}

function dateTextSeconds(text: string): number | typeof WRONG {
  const m = DATE_TEXT.exec(text);
  if (m === null) return WRONG;
  const [year, month, day, hour = 0, minute = 0, second = 0] = m.slice(1, 7).map((part) => (part === undefined ? undefined : Number(part))) as number[];
  if (year! < FIRST_YEAR || month! < 1 || month! > 12 || day! < 1 || day! > 31 || hour > 23 || minute > 59 || second > 60) return WRONG;
  const utc = Date.UTC(year!, month! - 1, day!, hour, minute, second);
  // Date.UTC rolls 31 February over into March: such a date is not one.
  if (new Date(utc).getUTCDate() !== day) return WRONG;
  let offset = 0;
  const zone = m[7];
  if (zone !== undefined && zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replaceAll(':', '');
    offset = (zone.startsWith('-') ? -1 : 1) * (Number(digits.slice(0, 2)) * 3600 + Number(digits.slice(2, 4) || '0') * 60 + Number(digits.slice(4, 6) || '0'));
  }
  return Math.floor(utc / 1000) - offset;
}

/** Text from a string, a number (as SQLite's TEXT affinity stores it) or bytes that are UTF-8. */
function textOf(raw: unknown): string | typeof WRONG {
  if (typeof raw === 'string') return raw;
  if (typeof raw === 'number') return Number.isFinite(raw) ? String(raw) : WRONG;
  if (typeof raw === 'bigint') return raw.toString();
  if (Buffer.isBuffer(raw) || raw instanceof Uint8Array) {
    try {
      return UTF8.decode(raw);
    } catch {
      return WRONG;
    }
  }
  return WRONG;
}

/**
 * A media type, as `build` publishes one (src/render/media-type.ts). White space around it is
 * dropped: a CHAR column pads its value with spaces, which are no part of the type.
 */
function mediaTypeOf(raw: unknown): string | typeof WRONG {
  const text = textOf(raw);
  if (text === WRONG) return WRONG;
  const type = text.trim();
  return isMediaType(type) ? type : WRONG;
}

/** A source value in a message: its type and a short view, as the build names stored values. */
export function describeSourceValue(raw: unknown): string {
  if (raw === null || raw === undefined) return 'NULL';
  if (typeof raw === 'string') return `text ${quoted(raw.length > 40 ? `${raw.slice(0, 40)}…` : raw)}`;
  if (typeof raw === 'number' || typeof raw === 'bigint') return `the number ${raw}`;
  if (typeof raw === 'boolean') return `the boolean ${raw}`;
  if (raw instanceof Date) return `the date ${Number.isNaN(raw.getTime()) ? 'Invalid Date' : raw.toISOString()}`;
  if (raw instanceof Uint8Array) return describeBytes(raw);
  if (typeof raw === 'object') return describeObject(raw);
  return `a value of type ${typeof raw}`;
}

/**
 * What a driver made of a value that is not a scalar: an array (a PostgreSQL array), an object (a
 * PostgreSQL interval, a MySQL JSON or POINT), named with a short JSON view of it.
 */
function describeObject(raw: object): string {
  const kind = Array.isArray(raw) ? 'an array' : raw.constructor === Object || raw.constructor === undefined ? 'an object' : `an object (${raw.constructor.name})`;
  let view: string;
  try {
    view = JSON.stringify(raw, (_, value: unknown) => (typeof value === 'bigint' ? value.toString() : value)) ?? '';
  } catch {
    return kind;
  }
  return `${kind} ${escapedUnshowable(view.length > 40 ? `${view.slice(0, 40)}…` : view)}`;
}

/** Bytes shown before and after the first one that is not UTF-8: enough to find them in the source, few enough for a line. */
const BYTES_AROUND = 8;

/**
 * Bytes in a message: how many, and where they are not UTF-8, if anywhere, with the bytes around
 * that spot in hex, the first bad one in brackets (`5 bytes (not UTF-8 at offset 3: 42 61 64 [FF] 21)`),
 * so that an operator can find the value in the source.
 */
function describeBytes(bytes: Uint8Array): string {
  const bad = firstInvalidUtf8(bytes);
  if (bad < 0) return `${bytes.length} bytes`;
  const from = Math.max(0, bad - BYTES_AROUND);
  const to = Math.min(bytes.length, bad + 1 + BYTES_AROUND);
  const hex = [...bytes.subarray(from, to)].map((byte, i) => {
    const text = byte.toString(16).toUpperCase().padStart(2, '0');
    return from + i === bad ? `[${text}]` : text;
  });
  return `${bytes.length} bytes (not UTF-8 at offset ${bad}: ${from > 0 ? '… ' : ''}${hex.join(' ')}${to < bytes.length ? ' …' : ''})`;
}

/**
 * Where the first sequence that is not well-formed UTF-8 starts (a byte that cannot lead one, or
 * a sequence cut short, overlong, a surrogate or past U+10FFFF), counted from 0; -1 if there is none.
 */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; ) {
    const length = sequenceLength(bytes, i);
    if (length === 0) return i;
    i += length;
  }
  return -1;
}

/** The length of the well-formed UTF-8 sequence at `i`, or 0 (the ranges of the Unicode standard's table 3-7). */
function sequenceLength(bytes: Uint8Array, i: number): number {
  const lead = bytes[i]!;
  if (lead < 0x80) return 1;
  const [length, low, high] =
    lead >= 0xc2 && lead <= 0xdf ? [2, 0x80, 0xbf]
    : lead === 0xe0 ? [3, 0xa0, 0xbf]
    : lead === 0xed ? [3, 0x80, 0x9f]
    : lead >= 0xe1 && lead <= 0xef ? [3, 0x80, 0xbf]
    : lead === 0xf0 ? [4, 0x90, 0xbf]
    : lead >= 0xf1 && lead <= 0xf3 ? [4, 0x80, 0xbf]
    : lead === 0xf4 ? [4, 0x80, 0x8f]
    : [0, 0, 0];
  for (let k = 1; k < length; k++) {
    const byte = bytes[i + k];
    if (byte === undefined || byte < (k === 1 ? low : 0x80) || byte > (k === 1 ? high : 0xbf)) return 0;
  }
  return length;
}
