import type Database from 'better-sqlite3';
import { applyRowsByKey } from './keyed-rows.js';
import type { SyncSource } from './sync-source.js';
import { passRest, passTo, TargetPages } from './target-pages.js';
import type { SourceRow, TableSync } from './table-sync.js';

/**
 * One table brought to the source's rows by a full compare: a merge of two streams in key order,
 * the source's query and vidfeeds's table (read in pages by key, so neither side is ever whole in
 * memory). A key only in the source is inserted, a key only in vidfeeds's table deleted, a key in
 * both updated only when a normalised value differs. So the change log, which triggers fill on
 * every write, records exactly the rows that changed.
 *
 * Where the table's digests are trusted (src/sync/digest-table.ts), the merge reads them in place
 * of the stored rows: a source row whose digest is its key's is unchanged, and only the others are
 * shaped, read back and compared. Where the server makes the digests, the source is first read
 * for keys and digests alone, and only the rows whose digest moved are read in full, by key.
 * Otherwise the merge reads every stored row, and fills the digests as it goes for the next sync.
 */

/** Rows whose digest moved (or that are new, gone or skipped) read by key after a digest pass, at most; past it the table is merged in full. */
export const MAX_DIGEST_MOVES = 100_000;

export async function syncTable(target: Database.Database, source: SyncSource, sync: TableSync): Promise<void> {
  if (sync.digests.trusted && sync.digests.server !== undefined && (await compareDigests(source, sync))) return;
  await mergeRows(target, source, sync);
}

async function mergeRows(target: Database.Database, source: SyncSource, sync: TableSync): Promise<void> {
  const { plan, digests } = sync;
  const keyCount = plan.keys.length;
  const trusted = digests.trusted;
  digests.beginCompare();
  const pages = trusted ? digests.pages() : new TargetPages(target, plan.table, plan.keys, plan.columns);
  const gone = (key: number[]) => sync.remove(key);
  await sync.forEachRow(digests.rows(source), (row) => {
    const head = passTo(pages, row.key, keyCount, gone);
    const held = head !== undefined;
    // Taken before the next head(), which may fill the same array again.
    const digest = held && trusted ? (head[keyCount] as number | null) : undefined;
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
  passRest(pages, keyCount, gone);
  digests.endCompare();
}

/**
 * The source's keys and digests merged with the stored ones, writing nothing; then the keys only
 * vidfeeds holds deleted and the rows whose digest moved read by key and applied. False, with
 * nothing written or reported, when more than MAX_DIGEST_MOVES rows need that: the caller merges
 * the table in full.
 */
async function compareDigests(source: SyncSource, sync: TableSync): Promise<boolean> {
  const { plan, digests } = sync;
  const keyCount = plan.keys.length;
  const pages = digests.pages();
  const gone: number[][] = [];
  /** Keys as the source gave them: read back by `1`, a key the source holds as '001' would not be found. */
  const moved: unknown[][] = [];
  const skipped: Array<[name: string, reason: string]> = [];
  let unchanged = 0;
  const tooMany = () => gone.length + moved.length + skipped.length > MAX_DIGEST_MOVES;
  let over = false;
  /** The last row looked at, and the key of the last row moved: rows of one key come one after another. */
  let last: SourceRow | undefined;
  let lastMoved: readonly number[] | undefined;
  const move = (row: SourceRow) => {
    moved.push(plan.keys.map((column) => row.raw[column]));
    lastMoved = row.key;
  };
  await sync.forEachRow(
    digests.keysAndDigests(),
    (row) => {
      last = row;
      if (over) return true;
      const head = passTo(pages, row.key, keyCount, (key) => gone.push(key));
      const digest = head === undefined ? undefined : (head[keyCount] as number | null);
      if (digest !== undefined && digest !== null && digest === digests.digestOf(row.raw)) unchanged++;
      else move(row);
      over = tooMany();
      return true;
    },
    (name, reason, sameKeyAs) => {
      if (sameKeyAs === undefined) skipped.push([name, reason]);
      // A key of several rows is read in full, and its rows after the first named, below.
      else if (lastMoved !== sameKeyAs) {
        unchanged--;
        move(last!);
      }
    },
  );
  if (!over) {
    passRest(pages, keyCount, (key) => {
      gone.push(key);
      over = tooMany();
      return !over;
    });
  }
  if (over) return false;
  sync.counts.unchanged += unchanged;
  for (const [name, reason] of skipped) sync.skip(name, reason);
  for (const key of gone) sync.remove(key);
  await applyRowsByKey(source, sync, moved);
  return true;
}
