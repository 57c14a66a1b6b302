import type Database from 'better-sqlite3';

/**
 * Values of `site_meta` (the schema's first migration) kept as JSON: what `vidfeeds sync` keeps between syncs (its
 * digests' state, its watermarks), written in the transaction of the sync they describe.
 */

/** The value kept under `key`, parsed; null when there is none, or it is not JSON. */
export function readMetaJson(db: Database.Database, key: string): unknown {
  const row = db.prepare('SELECT value FROM site_meta WHERE key = ?').get(key) as { value: string } | undefined;
  if (row === undefined) return null;
  try {
    return JSON.parse(row.value) as unknown;
  } catch {
    return null;
  }
}

/** Keeps `value` as JSON under `key`; false when it was kept already, unchanged. */
export function writeMetaJson(db: Database.Database, key: string, value: unknown): boolean {
  const text = JSON.stringify(value);
  const stored = db.prepare('SELECT value FROM site_meta WHERE key = ?').pluck().get(key) as string | undefined;
  if (stored === text) return false;
  db.prepare('INSERT INTO site_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, text);
  return true;
}

export function deleteMeta(db: Database.Database, key: string): void {
  db.prepare('DELETE FROM site_meta WHERE key = ?').run(key);
}
