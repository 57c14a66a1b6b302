import type Database from 'better-sqlite3';
import { quoteIdentifier as quote } from '../db/quote-identifier.js';
import { readMetaJson, writeMetaJson } from '../db/site-meta.js';
import { looksLikeMojibake, type MojibakeColumn } from './mojibake.js';
import { rowName } from './source-row.js';
import type { TablePlan } from './table-plan.js';

/**
 * The mojibake warning (src/sync/mojibake.ts) on every sync, not only the first that read the
 * rows: a sync reads in full only the rows whose digest moved, so the text of the others is not
 * looked at again. Each column found is kept in vidfeeds's database (`site_meta`, key
 * `sync.mojibake`, written in the sync's transaction) and counted again, in vidfeeds's own rows
 * (which hold the text as the source gave it), by every sync that found it or changed its table;
 * the others keep their count. A column is forgotten once its rows are clean: mapped as bytes, or
 * corrected in the source.
 */

const KEY = 'sync.mojibake';

/** Lead letters of mojibake (Â to ô): SQLite's GLOB picks the rows worth a look, the pattern judges them. */
const CANDIDATE = '*[\u00C2-\u00F4]*';

/**
 * The columns that look like UTF-8 read as latin1 after this sync: those `found` in the rows it
 * read, and those an earlier sync found, counted again where the sync may have changed them
 * (`changed` tables); kept for the next sync. Called in the sync's transaction, after its writes.
 */
export function mojibakeColumns(target: Database.Database, plans: readonly TablePlan[], found: readonly MojibakeColumn[], changed: (table: string) => boolean): MojibakeColumn[] {
  const kept = keptColumns(target);
  const columns = [...found, ...kept].filter((m, i, all) => all.findIndex((o) => o.table === m.table && o.column === m.column) === i);
  const now: MojibakeColumn[] = [];
  for (const { table, column } of columns) {
    const plan = plans.find((p) => p.table === table && p.columns.includes(column));
    // A table no longer mapped, or a column no longer selected, is not this sync's to warn about.
    if (plan === undefined) continue;
    const known = kept.find((m) => m.table === table && m.column === column);
    const recount = changed(table) || found.some((m) => m.table === table && m.column === column) || known === undefined;
    const counted = recount ? countStored(target, plan, column) : known;
    if (counted !== null) now.push(counted);
  }
  writeMetaJson(target, KEY, now);
  return now;
}

/** What the last committed sync kept. */
function keptColumns(target: Database.Database): MojibakeColumn[] {
  const kept = readMetaJson(target, KEY);
  return Array.isArray(kept) ? (kept as MojibakeColumn[]).filter((m) => typeof m?.table === 'string' && typeof m.column === 'string') : [];
}

/** The stored rows of a column whose text looks like mojibake: how many, and the first in key order; null for none. */
function countStored(target: Database.Database, plan: TablePlan, column: string): MojibakeColumn | null {
  const keys = plan.keys.map(quote).join(', ');
  const rows = target.prepare(`SELECT ${keys}, ${quote(column)} AS vidfeeds_text FROM ${quote(plan.table)} WHERE ${quote(column)} GLOB ? ORDER BY ${keys}`).iterate(CANDIDATE);
  let result: MojibakeColumn | null = null;
  for (const row of rows as Iterable<Record<string, unknown>>) {
    const text = row.vidfeeds_text;
    if (typeof text !== 'string' || !looksLikeMojibake(text)) continue;
    if (result === null) result = { table: plan.table, column, rows: 1, row: rowName(plan, row), found: text };
    else result.rows++;
  }
  return result;
}
