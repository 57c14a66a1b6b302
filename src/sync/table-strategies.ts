import type Database from 'better-sqlite3';
import { compareKeys, keyGroups, outOfOrder, readKey, type KeyGroup, type UnkeyedRow } from './key-groups.js';
import { lookedUp, mergedWith, reconcile } from './reconcile.js';
import { rowName } from './source-row.js';
import type { RowBatch, RowFilter, SyncSource } from './sync-source.js';
import { passRest, passTo, TargetPages } from './target-pages.js';
import type { TableSync } from './table-sync.js';
import type { Mode } from './watermark-state.js';

/**
 * How one table is brought to the source's rows: which source rows, and which side of vidfeeds's,
 * feed the one reconcile step (src/sync/reconcile.ts). Three ways, tried in this order, each
 * falling back to the next where it cannot be trusted to be cheaper (decided in `syncRows` alone):
 * - changed rows only (`sync --changed-only`, a table with a watermark): the source's keys merged
 *   with vidfeeds's (a key only vidfeeds has is deleted), then the rows whose watermark is past the
 *   last syncs' and the keys vidfeeds lacks read by key. A key the source holds several rows of is
 *   read whole, so the row kept is the one a full compare keeps.
 * - the server's digests (PostgreSQL, digests trusted): the source's keys and digests merged with
 *   the stored digests, writing nothing; then the keys only vidfeeds holds deleted and the rows
 *   whose digest moved read by key.
 * - a full merge: every source row beside vidfeeds's table in key order, or beside its digests
 *   where they are trusted (src/sync/digest-table.ts), which it writes again as it goes.
 * So the change log, which triggers fill on every write, records exactly the rows that changed.
 */

/** Keys missing from vidfeeds's table read by key under --changed-only, at most; past it the table is merged in full. */
export const MAX_MISSING_KEYS = 20_000;

/** Rows whose digest moved (or that are new, gone or skipped) read by key after a digest pass, at most; past it the table is merged in full. */
export const MAX_DIGEST_MOVES = 100_000;

/** Keys per query that reads rows by key. */
const KEYS_PER_QUERY = 500;

/** Syncs the table's rows as `mode` asks, or in full where that cannot be done; the mode it was done in. */
export async function syncRows(target: Database.Database, source: SyncSource, sync: TableSync, mode: Mode): Promise<Mode> {
  if (mode.mode === 'changed') {
    if (await changedRows(target, source, sync, mode.since)) return mode;
    mode = { mode: 'full', reason: `more than ${MAX_MISSING_KEYS} of its source keys are to be read by key (missing from vidfeeds's table, or held by several rows)` };
  }
  if (sync.digests.trusted && sync.digests.keyed && (await movedRows(source, sync))) return mode;
  const { plan, digests } = sync;
  const trusted = digests.trusted;
  digests.beginCompare();
  const pages = trusted ? digests.pages() : new TargetPages(target, plan.table, plan.keys, plan.columns);
  await reconcile(sync, rowGroups(sync, digests.rows(source)), mergedWith(sync, pages, trusted));
  digests.endCompare();
  return mode;
}

function rowGroups(sync: TableSync, rows: AsyncIterable<RowBatch>): AsyncIterable<Array<KeyGroup | UnkeyedRow>> {
  return keyGroups(sync.plan, rows, { checkStop: () => sync.checkStop(), problem: (row) => sync.shaper.problem(row) });
}

/**
 * The server's keys and digests merged with the stored ones, then what moved applied. False, with
 * nothing written or reported, when more than MAX_DIGEST_MOVES rows would be read by key.
 */
async function movedRows(source: SyncSource, sync: TableSync): Promise<boolean> {
  const { plan, digests } = sync;
  const keyCount = plan.keys.length;
  const pages = digests.pages();
  const gone: number[][] = [];
  /** Keys as the source gave them: read back by `1`, a key the source holds as '001' would not be found. */
  const moved: unknown[][] = [];
  const skipped: UnkeyedRow[] = [];
  let unchanged = 0;
  const over = () => gone.length + moved.length + skipped.length > MAX_DIGEST_MOVES;
  let tooMany = false;
  for await (const batch of keyGroups(plan, digests.keysAndDigests(), { checkStop: () => sync.checkStop() })) {
    // Read to the end even when too many moved: a query left before its end drops the connection.
    for (let i = 0; i < batch.length && !tooMany; i++) {
      const item = batch[i]!;
      if (!('kept' in item)) skipped.push(item);
      else {
        const head = passTo(pages, item.key, keyCount, (key) => gone.push(key));
        const digest = head === undefined ? undefined : (head[keyCount] as number | null);
        // A key of several rows is read in full: the row kept is chosen among all of them.
        if (item.others.length === 0 && digest !== undefined && digest !== null && digest === digests.digestOf(item.kept)) unchanged++;
        else moved.push(sourceKey(sync, item));
      }
      tooMany = over();
    }
  }
  if (!tooMany) {
    passRest(pages, keyCount, (key) => {
      gone.push(key);
      tooMany = over();
      return !tooMany;
    });
  }
  if (tooMany) return false;
  sync.counts.unchanged += unchanged;
  for (const { row, reason } of skipped) sync.skip(row.name(), reason);
  for (const key of gone) sync.remove(key);
  await readByKey(source, sync, moved);
  return true;
}

/**
 * The source's keys merged with vidfeeds's (deleting the keys it lost), then the changed rows and
 * the missing keys read. False when more than MAX_MISSING_KEYS keys are missing: nothing but
 * deletions was written.
 */
async function changedRows(target: Database.Database, source: SyncSource, sync: TableSync, since: unknown): Promise<boolean> {
  const { plan } = sync;
  const keyCount = plan.keys.length;
  // vidfeeds's keys: trusted digests mirror them, and read in a tenth of the time the table's
  // rows take (packed a chunk of keys a row, where the table's rows are read whole).
  const pages = sync.digests.trusted ? sync.digests.pages() : new TargetPages(target, plan.table, plan.keys, plan.keys);
  /** Keys as the source gave them: read back by `1`, a key the source holds as '001' would not be found. */
  const missing: unknown[][] = [];
  /** Keys the source holds several rows of, read whole: the row kept is chosen among all of them. */
  const several: unknown[][] = [];
  const gone = (key: number[]) => sync.remove(key);
  let tooMany = false;
  // The key read last, until a row of another key shows whether the source holds several rows of
  // it. Only keys are read here, so they are not grouped as rows are (keyGroups): a key allocates
  // its array and nothing more, which keeps this pass near the driver's read of the keys.
  let last: number[] | null = null;
  let lastValues: unknown[] = [];
  let lastRows = 0;
  const close = () => {
    if (last === null) return;
    const held = passTo(pages, last, keyCount, gone) !== undefined;
    if (lastRows > 1) several.push(lastValues);
    else if (!held) missing.push(lastValues);
    tooMany = missing.length + several.length > MAX_MISSING_KEYS;
  };
  for await (const batch of source.keys(plan.query, plan.keys)) {
    sync.checkStop();
    // Read to the end even when too many are missing: a query left before its end drops the connection.
    for (let i = 0; i < batch.length && !tooMany; i++) {
      const values = batch[i]!;
      const key: number[] = new Array(keyCount);
      // A key that is not an integer is skipped, and named, when its row is read in full.
      if (readKey(plan, values, key) >= 0) continue;
      const order = last === null ? 1 : compareKeys(key, last, keyCount);
      if (order === 0) {
        lastRows++;
        continue;
      }
      if (order < 0) throw outOfOrder(plan, rowName(plan, Object.fromEntries(plan.keys.map((column, c) => [column, values[c]]))), last!);
      close();
      last = key;
      lastValues = values;
      lastRows = 1;
    }
  }
  if (!tooMany) close();
  if (tooMany) return false;
  passRest(pages, keyCount, gone);
  await readByKey(source, sync, missing, { column: plan.watermark!, value: since }, several);
  return true;
}

/** A key as the source gave it. */
function sourceKey(sync: TableSync, group: KeyGroup): unknown[] {
  return sync.plan.keys.map((column) => group.kept.raw[column]);
}

/**
 * Reads in full the source rows of `keys` (and, with `after`, those whose watermark is past it)
 * and reconciles each with its stored row. The keys of `whole` are read first, every row of each:
 * keys the source holds several rows of, whose kept row is chosen among all of them, not among
 * the few a watermark lets through. A key read twice is reconciled once, and its rows named once.
 */
async function readByKey(source: SyncSource, sync: TableSync, keys: ReadonlyArray<readonly unknown[]>, after?: RowFilter['after'], whole: ReadonlyArray<readonly unknown[]> = []): Promise<void> {
  const seen = new Map<string, number>();
  let read = 0;
  const apply = (filter: RowFilter) => reconcile(sync, rowGroups(sync, sync.digests.rows(source, filter)), lookedUp(sync, seen, ++read));
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
