import { decodeHTML } from 'entities';
import { expected, type ColumnSpec } from '../db/columns.js';
import type { ValueIssue } from '../db/decode.js';
import { describeSourceValue, normaliseValue, WRONG, type StoredValue } from './sync-values.js';
import type { TablePlan } from './table-plan.js';

/**
 * One source row made into the values vidfeeds's table stores, column by column, by the rules
 * `build` applies to values of the wrong type (docs/database.md, "Values of the wrong type").
 * vidfeeds's schema refuses such values at write time, so where `build` would leave a field out,
 * the sync stores what stands in for it (NULL, the empty text, 0, `created_at`), and where `build`
 * would leave the row or the user out, the sync skips the row. Either way the value is named.
 */

/** A row the sync did not write, and why. */
export interface SkippedSourceRow {
  table: string;
  /** The row's key as the source gave it: `id=12`, `user_id=3, video_id=9`. */
  row: string;
  reason: string;
}

/** A row's values in `plan.columns` order, and what was wrong with them. */
export interface ShapedValues {
  values: StoredValue[];
  issues: ValueIssue[];
}

/** The row's values, or the reason it is skipped. */
export type ShapedRow = ShapedValues | { skipped: string };

export function rowName(plan: TablePlan, raw: Record<string, unknown>): string {
  return plan.keys.map((k) => `${k}=${typeof raw[k] === 'number' || typeof raw[k] === 'bigint' || (typeof raw[k] === 'string' && /^\d+$/.test(raw[k] as string)) ? String(raw[k]) : describeSourceValue(raw[k])}`).join(', ');
}

/** Why a row whose key column `index` (in `plan.keys`, which `plan.columns` starts with) cannot be stored is skipped. */
export function keyProblem(plan: TablePlan, index: number, raw: Record<string, unknown>): string {
  const column = plan.keys[index]!;
  return `key column ${column}: found ${describeSourceValue(raw[column])}, expected ${expected(plan.specs[index]!)}`;
}

/** `name` gives the row's name for the issues it reports; it is asked only when there is one. */
export function shapeRow(plan: TablePlan, raw: Record<string, unknown>, name: () => string): ShapedRow {
  const values: StoredValue[] = new Array(plan.columns.length);
  const issues: ValueIssue[] = [];
  let createdAt: StoredValue | undefined;
  const late: number[] = [];
  for (let i = 0; i < plan.columns.length; i++) {
    const column = plan.columns[i]!;
    const spec = plan.specs[i]!;
    const found = raw[column];
    const value = plan.decode.has(i) ? decodedValue(spec, found) : normaliseValue(spec, found);
    if (value !== WRONG) {
      values[i] = value;
      if (column === 'created_at') createdAt = value;
      continue;
    }
    const issue = (outcome: string): ValueIssue => ({ table: plan.table, row: name(), column, found: describeSourceValue(found), expected: expected(spec), rule: spec.rule, outcome });
    const key = plan.keys.indexOf(column);
    if (key >= 0) return { skipped: keyProblem(plan, key, raw) };
    if (spec.rule === 'row' || spec.rule === 'sql' || spec.rule === 'owner') {
      const what = spec.rule === 'owner' ? 'the user is not published' : plan.table === 'videos' ? 'the video is not published' : 'the row is left out of the documents';
      return { skipped: `column ${column}: found ${describeSourceValue(found)}, expected ${expected(spec)}; ${what}` };
    }
    if (spec.fallback === 'created_at') {
      late.push(i);
      continue;
    }
    const stand = standIn(spec);
    values[i] = stand;
    issues.push(issue(`stored as ${stand === null ? 'NULL' : JSON.stringify(stand)} (${spec.rule === 'omit' ? 'the field is left out' : spec.rule === 'order' ? 'placed last' : 'no document shows it'})`));
  }
  for (const i of late) {
    // `created_at` is required wherever `updated_at` falls back to it, and was checked above.
    values[i] = createdAt ?? null;
    const spec = plan.specs[i]!;
    issues.push({ table: plan.table, row: name(), column: plan.columns[i]!, found: describeSourceValue(raw[plan.columns[i]!]), expected: expected(spec), rule: spec.rule, outcome: 'stored as created_at (the field is left out)' });
  }
  return { values, issues };
}

/**
 * The value of a column whose HTML character references are decoded: read as text, decoded, then
 * held to the column's kind, which sees the text as the documents will (a media type written
 * `video/mp4; codecs=&quot;avc1&quot;` is one once decoded; `&quot;` is no part of one).
 */
function decodedValue(spec: ColumnSpec, found: unknown): StoredValue | typeof WRONG {
  const text = normaliseValue({ ...spec, kind: 'text' }, found);
  if (typeof text !== 'string') return text;
  return normaliseValue(spec, text.includes('&') ? decodeHTML(text) : text);
}

/** What a column stores in place of a wrong value: what `build` shows in its place. */
function standIn(spec: ColumnSpec): StoredValue {
  if (spec.nullable) return null;
  if (spec.rule === 'order') return spec.kind === 'time' ? 0 : Number.MAX_SAFE_INTEGER;
  // What the documents show in place of a media type (`file_type`'s application/octet-stream).
  if (spec.kind === 'mediaType') return spec.fallback ?? '';
  if (spec.kind === 'text' || spec.kind === 'url' || spec.kind === 'name') return '';
  return 0;
}
