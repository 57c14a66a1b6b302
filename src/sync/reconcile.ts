import { sameKeyReason, type KeyGroup, type UnkeyedRow } from './key-groups.js';
import { passRest, passTo, type KeyedPages } from './target-pages.js';
import type { TableSync } from './table-sync.js';

/**
 * The one step every way of syncing a table ends in: each key the source gives brought to its
 * kept row, written only where a value differs. What the strategies (src/sync/table-strategies.ts)
 * choose is which source rows feed it and what stands for vidfeeds's side:
 * - `mergedWith`: vidfeeds's table, or its digests, read in key order beside the source's rows; a
 *   key only vidfeeds holds is deleted;
 * - `lookedUp`: rows read by key, each stored row looked up; a key already reconciled by an
 *   earlier read of the same sync is passed over.
 */

/** What vidfeeds holds for the key a reconcile is at. */
export interface StoredSide {
  /** Moves to `key`: false when the key is not to be reconciled here. */
  take(key: readonly number[]): boolean;
  /** vidfeeds holds the key. */
  held: boolean;
  /** The key's kept digest (undefined: none); with `trustDigest`, an equal source digest shows the row unchanged. */
  digest: number | null | undefined;
  readonly trustDigest: boolean;
  /** The stored row (its columns in `plan.columns` order). */
  row(): readonly unknown[] | undefined;
  /** Whether a skipped row of `key` is named (a key reconciled by an earlier read was named then). */
  names(key: readonly number[]): boolean;
  /** After the last key. */
  end(): void;
}

export async function reconcile(sync: TableSync, groups: AsyncIterable<Array<KeyGroup | UnkeyedRow>>, stored: StoredSide): Promise<void> {
  const { digests } = sync;
  for await (const batch of groups) {
    for (const item of batch) {
      if (!('kept' in item)) {
        sync.skip(item.row.name(), item.reason);
        continue;
      }
      const { key, kept, others, unstorable } = item;
      if (!stored.take(key)) {
        if (stored.names(key)) for (const { row, reason } of unstorable) sync.skip(row.name(), reason);
        continue;
      }
      for (const { row, reason } of unstorable) sync.skip(row.name(), reason);
      const digest = stored.digest;
      if (stored.trustDigest && digest !== undefined && digest !== null && digest === digests.digestOf(kept)) sync.unchanged(key, digest);
      else {
        const shaped = sync.shape(kept);
        // A row that can no longer be stored goes: its old form is not kept.
        if (shaped === undefined) {
          if (stored.held) sync.remove(key);
        } else sync.apply(kept, shaped, stored.held ? stored.row() : undefined, digest);
      }
      for (const other of others) sync.skip(other.name(), sameKeyReason(sync.plan));
    }
  }
  stored.end();
}

/**
 * vidfeeds's side read in key order beside the source's: its rows (`digests` false), or its
 * digests (true), whose rows are looked up only when a digest differs.
 */
export function mergedWith(sync: TableSync, pages: KeyedPages, digests: boolean): StoredSide {
  const keyCount = sync.plan.keys.length;
  const gone = (key: number[]) => sync.remove(key);
  let head: unknown[] | undefined;
  let at: readonly number[] = [];
  return {
    held: false,
    digest: undefined,
    trustDigest: digests,
    take(key) {
      head = passTo(pages, key, keyCount, gone);
      at = key;
      this.held = head !== undefined;
      // Taken before the next head(), which may fill the same array again.
      this.digest = digests && head !== undefined ? (head[keyCount] as number | null) : undefined;
      return true;
    },
    row: () => (digests ? sync.writer.find(at) : head),
    names: () => true,
    end: () => passRest(pages, keyCount, gone),
  };
}

/** vidfeeds's rows looked up by key; `seen` holds the keys reconciled by each read of the sync (its number, `read`). */
export function lookedUp(sync: TableSync, seen: Map<string, number>, read: number): StoredSide {
  let stored: unknown[] | undefined;
  return {
    held: false,
    digest: undefined,
    trustDigest: false,
    take(key) {
      const id = key.join(',');
      if (seen.has(id)) return false;
      seen.set(id, read);
      stored = sync.writer.find(key);
      this.held = stored !== undefined;
      this.digest = sync.digests.find(key);
      return true;
    },
    row: () => stored,
    names: (key) => (seen.get(key.join(',')) ?? read) >= read,
    end: () => undefined,
  };
}
