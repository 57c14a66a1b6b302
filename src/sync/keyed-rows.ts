import type { RowFilter, SyncSource } from './sync-source.js';
import type { TableSync } from './table-sync.js';

/** Keys per query that reads rows by key. */
const KEYS_PER_QUERY = 500;

/**
 * Reads in full the source rows of `keys` (and, with `after`, those whose watermark is past it) and
 * brings each stored row to its source row, writing only where a value differs. A key read twice
 * (changed and also asked for by key) is applied once, and its other rows named once.
 *
 * The keys of `whole` are read first, every row of each: keys the source holds several rows of,
 * whose kept row is chosen among all of them (TableSync.forEachRow), not among the few a
 * watermark lets through.
 */
export async function applyRowsByKey(
  source: SyncSource,
  sync: TableSync,
  keys: ReadonlyArray<readonly unknown[]>,
  after?: RowFilter['after'],
  whole: ReadonlyArray<readonly unknown[]> = [],
): Promise<void> {
  /** Each key applied, with the query that applied it. */
  const seen = new Map<string, number>();
  let query = 0;
  const apply = async (filter: RowFilter) => {
    query++;
    const skip = (name: string, reason: string, sameKeyAs?: readonly number[]) => {
      // The other rows of a key an earlier query applied were named then.
      if (sameKeyAs !== undefined && (seen.get(sameKeyAs.join(',')) ?? query) < query) return;
      sync.skip(name, reason);
    };
    await sync.forEachRow(
      sync.digests.rows(source, filter),
      (row) => {
        const id = row.key.join(',');
        if (seen.has(id)) return true;
        seen.set(id, query);
        const stored = sync.writer.find(row.key);
        const shaped = sync.shape(row);
        // A row that can no longer be stored goes, as in a full compare: its old form is not kept.
        if (shaped === undefined) {
          if (stored !== undefined) sync.remove(row.key);
          return false;
        }
        sync.apply(row, shaped, stored, sync.digests.find(row.key));
        return true;
      },
      skip,
    );
  };
  for (let at = 0; at < whole.length; at += KEYS_PER_QUERY) {
    sync.checkStop();
    await apply({ keys: whole.slice(at, at + KEYS_PER_QUERY) });
  }
  if (after !== undefined) await apply({ after, keys: keys.slice(0, KEYS_PER_QUERY) });
  for (let at = after === undefined ? 0 : KEYS_PER_QUERY; at < keys.length; at += KEYS_PER_QUERY) {
    sync.checkStop();
    await apply({ keys: keys.slice(at, at + KEYS_PER_QUERY) });
  }
}
