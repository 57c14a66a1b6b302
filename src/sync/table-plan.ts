import type Database from 'better-sqlite3';
import { editDistance } from '../config/config-messages.js';
import { SITE_TABLES, type ColumnSpec } from '../db/columns.js';
import { MappingError } from './sync-errors.js';
import type { SyncSource } from './sync-source.js';

/**
 * The mapping, checked against both databases before anything is written: each query runs (for
 * its columns only) in the source, and returns, by name, columns vidfeeds's table has, its key and
 * every column that has no default.
 */

/** The order tables are synced in: every table after the tables it refers to. */
export const SYNC_ORDER = [
  'users',
  'categories',
  'tags',
  'online_accounts',
  'interests',
  'friendships',
  'videos',
  'video_tags',
  'groups',
  'group_members',
  'saved_videos',
  'viewing_history',
  'recommendations',
  'attention_concepts',
  'attention_sources',
  'reading_list',
] as const;

export interface TableMapping {
  query: string;
  decodeEntities: readonly string[];
  /** A column the query returns beside the table's: when the source row last changed (`sync --changed-only`). */
  watermark?: string | null;
}

/** One vidfeeds table as a sync writes it. */
export interface TablePlan {
  table: string;
  query: string;
  /** The key columns, in the order of the table's key. */
  keys: readonly string[];
  /** The columns the query returns: the keys first, then the others in the query's order. */
  columns: readonly string[];
  specs: readonly ColumnSpec[];
  /** Indexes (into `columns`) of text columns whose HTML character references are decoded. */
  decode: ReadonlySet<number>;
  /** Per referring column, the table it refers to (from the schema's foreign keys). */
  references: ReadonlyMap<string, string>;
  /** The column of the query that says when a row last changed; not stored. */
  watermark: string | null;
}

/**
 * Every mapped table's plan, in sync order. Every query is checked, so that one run names every
 * problem of the mapping: a MappingError lists each, with its table and column.
 */
export async function planTables(target: Database.Database, source: SyncSource, mapping: Readonly<Record<string, TableMapping>>): Promise<TablePlan[]> {
  const unknown = Object.keys(mapping).filter((table) => !(SYNC_ORDER as readonly string[]).includes(table));
  const problems = unknown.map((table) => `sync.tables.${table}: vidfeeds has no such table; its tables are ${SYNC_ORDER.join(', ')}`);
  const plans: TablePlan[] = [];
  for (const table of SYNC_ORDER) {
    const map = mapping[table];
    if (map === undefined) continue;
    let returned: string[];
    try {
      returned = await source.columnsOf(map.query);
    } catch (error) {
      if (!(error instanceof MappingError)) throw error;
      problems.push(`sync.tables.${table}: the query fails in the source: ${error.message}`);
      continue;
    }
    const plan = planTable(target, table, map, returned);
    if (Array.isArray(plan)) problems.push(...plan);
    else plans.push(plan);
  }
  if (problems.length === 1) throw new MappingError(problems[0]!);
  if (problems.length > 1) throw new MappingError(`the mapping has ${problems.length} problems:\n  ${problems.join('\n  ')}\n`);
  return plans;
}

/** A table's plan, or its problems. */
function planTable(target: Database.Database, table: string, map: TableMapping, returned: readonly string[]): TablePlan | string[] {
  const kind = (target.prepare(`SELECT type FROM sqlite_master WHERE name = ?`).get(table) as { type: string } | undefined)?.type;
  if (kind !== 'table') {
    return [`sync.tables.${table}: vidfeeds's database has ${kind === undefined ? 'no such table' : `a ${kind} named ${table}, not a table`}: sync writes tables, and builds follow their change log`];
  }
  const info = target.prepare(`SELECT name, "notnull" AS not_null, dflt_value AS dflt, pk FROM pragma_table_info(?)`).all(table) as Array<{ name: string; not_null: number; dflt: string | null; pk: number }>;
  const spec = SITE_TABLES[table]!;
  const where = `sync.tables.${table}`;
  const problems: string[] = [];
  const watermark = map.watermark ?? null;
  // A mistyped watermark: the column the query returns for it is named once, as the one meant, not
  // again as a column the table does not have.
  const meant = watermark === null || returned.includes(watermark) ? undefined : nearest(watermark, returned.filter((c) => spec.columns[c] === undefined));
  if (watermark !== null && !returned.includes(watermark)) {
    problems.push(`${where}.watermark: the query does not return column ${watermark}${meant === undefined ? '' : ` (did you mean ${meant}?)`}; it returns ${returned.join(', ')}`);
  }
  if (watermark !== null && spec.columns[watermark] !== undefined) {
    problems.push(`${where}.watermark: ${watermark} is a column of ${table}; return the time a row last changed under a name of its own (AS changed_at)`);
  }
  const names = info.map((c) => c.name).filter((name) => spec.columns[name] !== undefined);
  const seen = new Set<string>();
  for (const column of returned.filter((c) => c !== watermark && c !== meant)) {
    if (seen.has(column)) problems.push(`${where}: the query returns column ${column} twice`);
    seen.add(column);
    if (!names.includes(column)) {
      problems.push(`${where}: the query returns column ${column}, which ${table} does not have${didYouMean(column, names, returned)}; its columns are ${names.join(', ')} (docs/database.md)`);
    }
  }
  const required = info.filter((c) => spec.key.includes(c.name) || (c.not_null === 1 && c.dflt === null)).map((c) => c.name);
  const missing = required.filter((c) => !seen.has(c));
  if (missing.length > 0) {
    problems.push(`${where}: the query does not return column ${missing.join(', ')}, which ${table} requires (${spec.key.includes(missing[0]!) ? 'its key' : 'no default'}); it returns ${returned.join(', ')}`);
  }
  for (const column of map.decodeEntities) {
    if (!seen.has(column)) problems.push(`${where}.decodeEntities: the query does not return column ${column}`);
    else if (!['text', 'url', 'name', 'mediaType'].includes(spec.columns[column]?.kind ?? '')) problems.push(`${where}.decodeEntities: ${column} is not a text column`);
  }
  if (problems.length > 0) return problems;
  const columns = [...spec.key, ...returned.filter((c) => !spec.key.includes(c) && c !== watermark)];
  const references = new Map(
    (target.prepare(`SELECT "from" AS col, "table" AS parent FROM pragma_foreign_key_list(?)`).all(table) as Array<{ col: string; parent: string }>).map((r) => [r.col, r.parent]),
  );
  return {
    table,
    query: map.query,
    keys: spec.key,
    columns,
    specs: columns.map((c) => spec.columns[c]!),
    decode: new Set(map.decodeEntities.map((c) => columns.indexOf(c))),
    references,
    watermark,
  };
}

/** ` (did you mean AS NAME?)` for a returned column near one of the table's that the query does not return. */
function didYouMean(column: string, names: readonly string[], returned: readonly string[]): string {
  const near = nearest(column, names.filter((name) => !returned.includes(name)));
  return near === undefined ? '' : ` (did you mean AS ${near}?)`;
}

/** The name of `names` nearest to `name`, if one is near enough to be a typing mistake. */
function nearest(name: string, names: readonly string[]): string | undefined {
  return names
    .map((other) => ({ other, distance: editDistance(name.toLowerCase(), other.toLowerCase()) }))
    .filter(({ other, distance }) => distance <= Math.max(1, Math.floor(other.length / 3)))
    .sort((a, b) => a.distance - b.distance)[0]?.other;
}
