import { isMediaType } from '../render/media-type.js';
import { quoted } from '../config/shown-text.js';
import { columnSpec, expected, MAX_UNIX_SECONDS, type ColumnSpec, type WrongValueRule } from './columns.js';

/**
 * The read boundary: every value the reader takes from a row goes through `RowDecoder`, which
 * checks it against its column's kind (src/db/columns.ts) and applies the column's rule when it is
 * of another storage class or out of its domain. Nothing past this point sees a BLOB where text
 * belongs, text where a number belongs, NaN, an infinite number or a date no document can carry.
 */

/** A value of the wrong type or out of its domain, and what was done about it. */
export interface ValueIssue {
  table: string;
  /** The row's key, as `id=12` or `user_id=3, video_id=9`. */
  row: string;
  column: string;
  /** What was found, e.g. `text "yesterday"`, `a BLOB of 3 bytes`, `the real 1.5`. */
  found: string;
  /** What the column must hold. */
  expected: string;
  rule: WrongValueRule;
  /** What happened, in words: `the field is left out`, `the row is left out`, ... */
  outcome: string;
}

export type IssueSink = (issue: ValueIssue) => void;

/** Checks whether text that holds U+FFFD was stored as bytes that are not UTF-8 (better-sqlite3 reads those as U+FFFD). */
export type InvalidUtf8Check = (table: string, column: string, rowId: number) => boolean;

/** Shows a stored value in a message: its storage class and a short, escaped view of it. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'string') {
    const shown = quoted(value.length > 40 ? `${value.slice(0, 40)}…` : value);
    return value.length > 40 ? `text ${shown} (${value.length} characters)` : `text ${shown}`;
  }
  if (typeof value === 'bigint') return `the integer ${value}`;
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'NaN';
    if (!Number.isFinite(value)) return `the real ${value > 0 ? '+' : '-'}Infinity`;
    return Number.isInteger(value) ? `the integer ${value}` : `the real ${value}`;
  }
  if (Buffer.isBuffer(value)) return `a BLOB of ${value.length} bytes`;
  return `a value of JavaScript type ${typeof value}`;
}

function outcomeOf(spec: ColumnSpec, table: string): string {
  switch (spec.rule) {
    case 'omit':
      return spec.fallback === undefined ? 'the field is left out' : `the field is left out (${spec.fallback} stands in)`;
    case 'row':
      return table === 'videos' ? 'the video is not published' : 'the row is left out of the documents';
    case 'owner':
      return 'the user is not published';
    case 'sql':
      return 'the row is left out of the documents';
    case 'order':
      return 'the row is ordered as SQLite orders mixed types';
    case 'unused':
      return 'no document shows it';
  }
}

export function issueOf(table: string, row: string, column: string, value: unknown, found = describeValue(value)): ValueIssue {
  const spec = columnSpec(table, column);
  return { table, row, column, found, expected: expected(spec), rule: spec.rule, outcome: outcomeOf(spec, table) };
}

/** One line for stderr: `videos id=12, column created_at: found text "yesterday", expected ...; the video is not published`. */
export function describeIssue(issue: ValueIssue): string {
  return `${issue.table} ${issue.row}, column ${issue.column}: found ${issue.found}, expected ${issue.expected}; ${issue.outcome}`;
}

/**
 * Decodes the columns of one row. Each getter returns the value, or null when it is absent or
 * wrong; a wrong value is reported, and when its rule is `row` or `owner` the row is marked
 * `rejected` (the caller then leaves it out). NULL in a nullable column is simply absent.
 */
export class RowDecoder {
  /** The first issue that makes the row unpublishable, if any. */
  rejected: ValueIssue | null = null;

  constructor(
    private readonly table: string,
    private readonly rowId: number | string,
    private readonly sink: IssueSink,
    private readonly invalidUtf8?: InvalidUtf8Check,
  ) {}

  private get row(): string {
    return typeof this.rowId === 'number' ? `id=${this.rowId}` : this.rowId;
  }

  private wrong(column: string, value: unknown, found?: string): null {
    const issue = issueOf(this.table, this.row, column, value, found);
    this.sink(issue);
    if ((issue.rule === 'row' || issue.rule === 'owner') && this.rejected === null) this.rejected = issue;
    return null;
  }

  private absent(column: string, value: unknown): boolean {
    return value === null && columnSpec(this.table, column).nullable === true;
  }

  /** Text, valid UTF-8. */
  text(column: string, value: unknown): string | null {
    if (this.absent(column, value)) return null;
    if (typeof value !== 'string') return this.wrong(column, value);
    if (value.includes('\uFFFD') && typeof this.rowId === 'number' && this.invalidUtf8?.(this.table, column, this.rowId)) {
      return this.wrong(column, value, `text that is not valid UTF-8 (${describeValue(value)})`);
    }
    return value;
  }

  /**
   * Text that is a media type (src/render/media-type.ts). Escaped, `video/mp4" onload="x`, `mp4` or
   * '' would stay inside their attribute, but be published as a type that is not one: such text is
   * a wrong value, by the column's rule.
   */
  mediaType(column: string, value: unknown): string | null {
    const text = this.text(column, value);
    if (text === null || isMediaType(text)) return text;
    return this.wrong(column, value);
  }

  /** An integer in the column's range (`count` from 0, `dimension` from 1). */
  integer(column: string, value: unknown): number | null {
    // From 1, a value of every integer kind: the column's spec is looked up for the others only.
    if (typeof value === 'number' && value >= 1 && Number.isSafeInteger(value)) return value;
    if (this.absent(column, value)) return null;
    const min = columnSpec(this.table, column).kind === 'dimension' ? 1 : 0;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) return this.wrong(column, value);
    return value;
  }

  /** Unix seconds as a Date, from 1970 to 9999. */
  time(column: string, value: unknown): Date | null {
    if (this.absent(column, value)) return null;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > MAX_UNIX_SECONDS) return this.wrong(column, value);
    return new Date(value * 1000);
  }

  /** 0 or 1; anything else is reported and read as false. */
  flag(column: string, value: unknown): boolean {
    if (value === 0 || value === 1) return value === 1;
    this.wrong(column, value);
    return false;
  }

  /** A finite number from 0 to 1. */
  fraction(column: string, value: unknown): number | null {
    if (this.absent(column, value)) return null;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) return this.wrong(column, value);
    return value;
  }
}
