import type Database from 'better-sqlite3';
import type { SyncSource } from './sync-source.js';
import { TargetPages } from './target-pages.js';
import { compareKeys, type TableSync } from './table-sync.js';

/**
 * One table brought to the source's rows by a full compare: a merge of two streams in key order,
 * the source's query and vidfeeds's table (read in pages by key, so neither side is ever whole in
 * memory). A key only in the source is inserted, a key only in vidfeeds's table deleted, a key in
 * both updated only when a normalised value differs. So the change log, which triggers fill on
 * every write, records exactly the rows that changed.
 *
 * Where the table's digests are trusted (src/sync/digest-table.ts), the merge reads them in place
 * of the stored rows: a source row whose digest is its key's is unchanged, and only the others are
 * shaped, read back and compared. Otherwise it reads every stored row, and fills the digests as it
 * goes for the next sync.
 */

export async function syncTable(target: Database.Database, source: SyncSource, sync: TableSync): Promise<void> {
  const { plan, digests } = sync;
  const keyCount = plan.keys.length;
  const trusted = digests.trusted;
  digests.beginCompare();
  const pages = trusted ? digests.pages() : new TargetPages(target, plan.table, plan.keys, plan.columns);
  await sync.forEachRow(source.rows(plan.query, plan.keys), (row) => {
    let head = pages.head();
    while (head !== undefined && compareKeys(head, row.key, keyCount) < 0) {
      sync.remove(head.slice(0, keyCount));
      pages.advance();
      head = pages.head();
    }
    const held = head !== undefined && compareKeys(head, row.key, keyCount) === 0;
    // Taken before the next head(), which may fill the same array again.
    const digest = held && trusted ? (head![keyCount] as number | null) : undefined;
    if (held) pages.advance();
    if (digest !== undefined && digest !== null && digest === digests.digestOf(row.raw)) {
      sync.unchanged(row.key, digest);
      return true;
    }
    const shaped = sync.shape(row);
    if (shaped === undefined) {
      if (held) sync.remove(row.key);
      return false;
    }
    if (!held) sync.apply(row, shaped, undefined, undefined);
    else if (trusted) sync.apply(row, shaped, sync.writer.find(row.key), digest);
    else sync.apply(row, shaped, head, undefined);
    return true;
  });
  for (let head = pages.head(); head !== undefined; pages.advance(), head = pages.head()) sync.remove(head.slice(0, keyCount));
  digests.endCompare();
}
