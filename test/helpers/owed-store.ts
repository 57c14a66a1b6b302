import Database from 'better-sqlite3';

/**
 * What a deploy's owed database holds (src/deploy/owed-store.ts), read with SQLite itself: for one
 * target, or every target, the documents owed to each listener, in file order.
 */
export function owedIn(file: string, target?: string): Map<string, string[]> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare<[string | null, string | null], { name: string; file: string }>(
        'SELECT l.name, o.file FROM owed o JOIN listeners l ON l.id = o.listener WHERE ? IS NULL OR l.target = ? ORDER BY l.name, o.file',
      )
      .all(target ?? null, target ?? null);
    const owed = new Map<string, string[]>();
    for (const row of rows) owed.set(row.name, [...(owed.get(row.name) ?? []), row.file]);
    return owed;
  } finally {
    db.close();
  }
}
