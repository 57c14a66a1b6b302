import type Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { readMetaJson, writeMetaJson } from '../db/site-meta.js';
import { logPrunedSince, tableLoggedSince } from '../db/sync-log.js';
import { redactUrl } from './sync-source.js';
import type { TablePlan } from './table-plan.js';

/**
 * What `sync --changed-only` needs to know of earlier syncs, per table with a watermark, kept in
 * vidfeeds's database (`site_meta`, key `sync.watermark.<table>`) and written in the sync's own
 * transaction: the mapping it was made with, the greatest watermark the source held at the last
 * two syncs, and the change log's position after the last one.
 *
 * A changed-only sync reads the rows whose watermark is at or past the one of the sync before the
 * last that changed something: one sync of overlap, so that a row written in a transaction that
 * was still open when the last sync read the source (its watermark already set, below that sync's
 * greatest) is read now. After the first sync of a mapping, it reads from that sync's greatest. It
 * compares the table in full instead when it cannot trust that reading: no earlier sync of this
 * mapping, rows of the table written by anything but a sync since (the change log says), or the
 * source's greatest watermark gone back (a restored source).
 */

/** A watermark as the driver gave it, kept with its type: it goes back to the source as a parameter. */
export interface StoredMark {
  type: 'bigint' | 'number' | 'string';
  value: string;
}

export interface TableMarks {
  /** Which mapping (source URL without password, query, watermark column) the marks are of. */
  mapping: string;
  /** Where the next changed-only sync reads from: the greatest watermark at the sync before the last one (at the first, its own); null when the table was empty. */
  previous: StoredMark | null;
  /** The source's greatest watermark at the last sync; null when the table was empty. */
  latest: StoredMark | null;
  /** The change log's position after the last sync's commit. */
  log: number;
}

export type Mode = { mode: 'full'; reason: string } | { mode: 'changed'; since: unknown };

export function mappingId(from: string, plan: TablePlan): string {
  return createHash('sha256').update(`${redactUrl(from)}\0${plan.query}\0${plan.watermark}`).digest('hex').slice(0, 32);
}

export function encodeMark(value: unknown): StoredMark | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return { type: 'bigint', value: String(value) };
  if (typeof value === 'number') return { type: 'number', value: String(value) };
  if (value instanceof Date) return { type: 'string', value: value.toISOString() };
  return { type: 'string', value: String(value) };
}

export function decodeMark(mark: StoredMark): unknown {
  return mark.type === 'bigint' ? BigInt(mark.value) : mark.type === 'number' ? Number(mark.value) : mark.value;
}

/**
 * Orders two marks of one column: decimal numbers (a BIGINT or a DECIMAL comes as text) exactly by
 * value, other numbers as numbers, other text as the drivers give dates.
 */
export function compareMarks(a: StoredMark, b: StoredMark): number {
  const byValue = compareDecimals(a.value, b.value);
  if (byValue !== null) return byValue;
  if (a.type !== 'string' && b.type !== 'string') return Math.sign(Number(a.value) - Number(b.value));
  return a.value === b.value ? 0 : a.value < b.value ? -1 : 1;
}

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/** Two decimal numbers written out (`10`, `-9.50`) in order, exactly; null unless both are. */
function compareDecimals(a: string, b: string): number | null {
  const x = DECIMAL.exec(a);
  const y = DECIMAL.exec(b);
  if (x === null || y === null) return null;
  const scale = Math.max(x[3]?.length ?? 0, y[3]?.length ?? 0);
  const scaled = (m: RegExpExecArray) => BigInt(`${m[1]}${m[2]}${(m[3] ?? '').padEnd(scale, '0')}`);
  const p = scaled(x);
  const q = scaled(y);
  return p === q ? 0 : p < q ? -1 : 1;
}

export class SyncMarks {
  constructor(private readonly target: Database.Database) {}

  read(table: string): TableMarks | null {
    return readMetaJson(this.target, keyOf(table)) as TableMarks | null;
  }

  /** Writes the marks when they differ from those stored; true when it wrote. */
  write(table: string, marks: TableMarks): boolean {
    return writeMetaJson(this.target, keyOf(table), marks);
  }

  /** How to sync a table when only changed rows are asked for, given its marks and the source's greatest watermark now. */
  mode(plan: TablePlan, mapping: string, latest: StoredMark | null): Mode {
    if (plan.watermark === null) return { mode: 'full', reason: 'it has no watermark column (sync.tables.<table>.watermark)' };
    const marks = this.read(plan.table);
    if (marks === null || marks.mapping !== mapping) return { mode: 'full', reason: 'no earlier sync of this mapping (source, query and watermark)' };
    if (marks.previous === null) return { mode: 'full', reason: `the source held no ${plan.watermark} at an earlier sync (no rows)` };
    const outside = this.writtenOutsideSync(plan.table, marks.log);
    if (outside !== null) return { mode: 'full', reason: outside };
    if (marks.latest !== null && (latest === null || compareMarks(latest, marks.latest) < 0)) {
      return { mode: 'full', reason: `the source's greatest ${plan.watermark} went back (${latest?.value ?? 'no rows'}, was ${marks.latest.value}): restored from a backup?` };
    }
    return { mode: 'changed', since: decodeMark(marks.previous) };
  }

  /** Why rows of `table` may have been written by something other than a sync since log position `log`; null when they were not. */
  private writtenOutsideSync(table: string, log: number): string | null {
    if (logPrunedSince(this.target, log)) return 'the change log was pruned past the last sync, so writes since cannot be ruled out';
    if (tableLoggedSince(this.target, table, log)) {
      return 'rows of it were written by something other than a sync since the last one (the change log says)';
    }
    return null;
  }
}

function keyOf(table: string): string {
  return `sync.watermark.${table}`;
}
