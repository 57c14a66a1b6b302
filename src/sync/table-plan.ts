import type Database from 'better-sqlite3';
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

/** Every mapped table's plan, in sync order; a MappingError names the first table and column that is wrong. */
export async function planTables(target: Database.Database, source: SyncSource, mapping: Readonly<Record<string, TableMapping>>): Promise<TablePlan[]> {
  const unknown = Object.keys(mapping).filter((table) => !(SYNC_ORDER as readonly string[]).includes(table));
  if (unknown.length > 0) throw new MappingError(`sync.tables.${unknown[0]}: vidfeeds has no such table; its tables are ${SYNC_ORDER.join(', ')}`);
  const plans: TablePlan[] = [];
  for (const table of SYNC_ORDER) {
    const map = mapping[table];
    if (map === undefined) continue;
    let returned: string[];
    try {
      returned = await source.columnsOf(map.query);
    } catch (error) {
      if (error instanceof MappingError) throw new MappingError(`sync.tables.${table}: the query fails in the source: ${error.message}`);
      throw error;
    }
    plans.push(planTable(target, table, map, returned));
  }
  return plans;
}

function planTable(target: Database.Database, table: string, map: TableMapping, returned: readonly string[]): TablePlan {
  const kind = (target.prepare(`SELECT type FROM sqlite_master WHERE name = ?`).get(table) as { type: string } | undefined)?.type;
  if (kind !== 'table') {
    throw new MappingError(`sync.tables.${table}: vidfeeds's database has ${kind === undefined ? 'no such table' : `a ${kind} named ${table}, not a table`}: sync writes tables, and builds follow their change log`);
  }
  const info = target.prepare(`SELECT name, "notnull" AS not_null, dflt_value AS dflt, pk FROM pragma_table_info(?)`).all(table) as Array<{ name: string; not_null: number; dflt: string | null; pk: number }>;
  const spec = SITE_TABLES[table]!;
  const where = `sync.tables.${table}`;
  const watermark = map.watermark ?? null;
  if (watermark !== null && !returned.includes(watermark)) {
    throw new MappingError(`${where}.watermark: the query does not return column ${watermark}; it returns ${returned.join(', ')}`);
  }
  if (watermark !== null && spec.columns[watermark] !== undefined) {
    throw new MappingError(`${where}.watermark: ${watermark} is a column of ${table}; return the time a row last changed under a name of its own (AS changed_at)`);
  }
  const seen = new Set<string>();
  for (const column of returned.filter((c) => c !== watermark)) {
    if (seen.has(column)) throw new MappingError(`${where}: the query returns column ${column} twice`);
    seen.add(column);
    if (!info.some((c) => c.name === column) || spec.columns[column] === undefined) {
      throw new MappingError(`${where}: the query returns column ${column}, which ${table} does not have; its columns are ${info.map((c) => c.name).join(', ')} (docs/database.md)`);
    }
  }
  const required = info.filter((c) => spec.key.includes(c.name) || (c.not_null === 1 && c.dflt === null)).map((c) => c.name);
  const missing = required.filter((c) => !seen.has(c));
  if (missing.length > 0) {
    throw new MappingError(`${where}: the query does not return column ${missing.join(', ')}, which ${table} requires (${spec.key.includes(missing[0]!) ? 'its key' : 'no default'}); it returns ${returned.join(', ')}`);
  }
  for (const column of map.decodeEntities) {
    if (!seen.has(column)) throw new MappingError(`${where}.decodeEntities: the query does not return column ${column}`);
    if (!['text', 'url', 'name'].includes(spec.columns[column]!.kind)) throw new MappingError(`${where}.decodeEntities: ${column} is not a text column`);
  }
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
