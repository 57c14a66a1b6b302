import type Database from 'better-sqlite3';
import { MappingError } from './sync-errors.js';
import { normaliseValue, WRONG } from './sync-values.js';
import type { SyncSource } from './sync-source.js';
import { applyRowsByKey } from './keyed-rows.js';
import { passRest, passTo, TargetPages } from './target-pages.js';
import { compareKeys, type TableSync } from './table-sync.js';

/**
 * One table brought to the source's rows by reading only what changed since an earlier sync
 * (`sync --changed-only`, for a table with a watermark column). Two reads of the source:
 * - its keys alone, merged with vidfeeds's keys: a key only vidfeeds has is deleted, and a key only
 *   the source has (a new row whose watermark did not move, or one skipped before because a row
 *   it refers to was missing) is read in full below;
 * - the rows whose watermark is past `since`, and those keys: each is compared with its stored
 *   row, and written only when a value differs. A key the source holds several rows of is read
 *   whole, so the row kept is the one a full compare keeps.
 * When more keys are missing than a filter should carry, the caller compares the table in full.
 */

/** Keys missing from vidfeeds's table read by key, at most; past it the table is compared in full. */
export const MAX_MISSING_KEYS = 20_000;

/** False when more than MAX_MISSING_KEYS keys are missing: nothing but deletions was written, and the table needs a full compare. */
export async function syncChangedRows(target: Database.Database, source: SyncSource, sync: TableSync, since: unknown): Promise<boolean> {
  const { plan } = sync;
  const keyCount = plan.keys.length;
  const specs = plan.specs.slice(0, keyCount);
  /** A key as the source gave it, as vidfeeds stores it; null when it is not one (not an integer). */
  const storedKey = (values: readonly unknown[]): number[] | null => {
    const key = values.map((value, i) => normaliseValue(specs[i]!, value));
    return key.some((value) => value === WRONG || value === null) ? null : (key as number[]);
  };
  const pages = new TargetPages(target, plan.table, plan.keys, plan.keys);
  /** Keys as the source gave them: read back by `1`, a key the source holds as '001' would not be found. */
  const missing: unknown[][] = [];
  /** Keys the source holds several rows of, read in full: the row kept is chosen among all of them. */
  const several: unknown[][] = [];
  const gone = (key: number[]) => sync.remove(key);
  let previous: number[] | undefined;
  let lastSeveral: number[] | undefined;
  for await (const batch of source.keys(plan.query, plan.keys)) {
    sync.checkStop();
    for (const raw of batch) {
      // A key that is not an integer is skipped, and named, when its row is read in full.
      const numbers = storedKey(raw);
      if (numbers === null) continue;
      if (previous !== undefined) {
        const order = compareKeys(numbers, previous, keyCount);
        // Two rows of one key: which is kept is chosen, and the other named, when rows are read in full.
        if (order === 0) {
          if (lastSeveral !== previous && several.push(raw) + missing.length > MAX_MISSING_KEYS) return false;
          lastSeveral = previous;
          continue;
        }
        if (order < 0) throw new MappingError(`sync.tables.${plan.table}: the source returns the key (${plan.keys.join(', ')}) out of numeric order (${numbers.join(', ')} after ${previous.join(', ')}): return it as an integer (CAST it in the query)`);
      }
      previous = numbers;
      if (passTo(pages, numbers, keyCount, gone) === undefined && missing.push(raw) + several.length > MAX_MISSING_KEYS) return false;
    }
  }
  passRest(pages, keyCount, gone);

  await applyRowsByKey(source, sync, missing, { column: plan.watermark!, value: since }, several);
  return true;
}
