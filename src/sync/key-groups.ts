import { keyProblem, rowName } from './source-row.js';
import { MappingError } from './sync-errors.js';
import { isDeferred, type DeferredRow, type RowBatch } from './sync-source.js';
import { normaliseValue, WRONG } from './sync-values.js';
import type { TablePlan } from './table-plan.js';

/**
 * A source's rows grouped by key, once, for every way of syncing a table: each key with the row
 * vidfeeds stores for it and the others the query returned with the same key. A source returns
 * such rows in any order; the one kept must not change from one sync to the next, so the rows of
 * a key are ordered by their values and the first that can be stored is kept.
 */

/** A source row as the driver gave it, with its key as vidfeeds stores it. */
export interface SourceRow {
  raw: Record<string, unknown>;
  key: number[];
  /** The digest the driver handed over with the row (DeferredRow); undefined when it handed none. */
  digest?: number | null;
  /** The row's name for messages, made when one needs it. */
  name: () => string;
}

export interface KeyGroup {
  key: number[];
  /** The row stored for the key: the first by its values that can be stored, else the last (which the sync names). */
  kept: SourceRow;
  /** The key's rows after `kept`, in the order of their values: skipped for sharing its key. */
  others: readonly SourceRow[];
  /** The key's rows before `kept`, which cannot be stored, and why. */
  unstorable: readonly UnkeyedRow[];
}

/** A row skipped without a group: its key cannot be stored; or, in a group, a row that cannot be. */
export interface UnkeyedRow {
  row: SourceRow;
  reason: string;
}

export interface GroupHooks {
  /** Throws when the sync must stop (a signal); called between batches. */
  checkStop(): void;
  /**
   * Why a row cannot be stored, or null; asked only of keys with several rows. Without it (a
   * stream of keys and digests alone), the first row of a key is kept.
   */
  problem?(row: SourceRow): string | null;
}

/**
 * Rows of one key held to choose the one kept. More is not a duplicate but a key that is not the
 * table's: the sync stops, rather than hold the table in memory.
 */
export const MAX_ROWS_OF_ONE_KEY = 10_000;

/** The others of a key of one row: shared, since nearly every key has one. */
const NONE: readonly never[] = [];

/** Why a row is skipped when another row of its key is kept. */
export function sameKeyReason(plan: TablePlan): string {
  return `another row of the query has the same key (${plan.keys.join(', ')}); the one kept comes first by its values`;
}

/**
 * The groups of `batches` in key order, a batch of groups for each batch of rows read (one await
 * a batch, not a row), with the rows whose key cannot be stored where they were read. Keys out of
 * numeric order stop the sync: the merges rely on them.
 */
export async function* keyGroups(plan: TablePlan, batches: AsyncIterable<RowBatch>, hooks: GroupHooks): AsyncIterable<Array<KeyGroup | UnkeyedRow>> {
  const keyCount = plan.keys.length;
  // A key read from a row's bytes is a safe integer, as an id or a reference stores it.
  const integerKeys = plan.specs.slice(0, keyCount).every((spec) => spec.kind === 'id' || spec.kind === 'ref');
  /**
   * The first row of the last key read, and any more of it (no array for a key of one row, nearly
   * every key): grouped once a row of another key (or the end) shows there are no more.
   */
  let first: KeyedRow | undefined;
  let more: KeyedRow[] | undefined;
  let groups: Array<KeyGroup | UnkeyedRow> = [];
  const close = () => {
    if (first !== undefined) groups.push(more === undefined ? first : choose([first, ...more], hooks));
    first = undefined;
    more = undefined;
  };
  for await (const batch of batches) {
    hooks.checkStop();
    for (const read of batch) {
      const deferred = isDeferred(read);
      let key: number[];
      let wrong = -1;
      // A key the driver read from the row's bytes is used as it is: no array a row made again.
      if (deferred && read.integers && integerKeys) key = read.key as number[];
      else {
        key = new Array(keyCount);
        wrong = readKey(plan, deferred ? read.key : read, key);
      }
      const row = new KeyedRow(plan, read, key, deferred ? read.digest : undefined);
      if (wrong >= 0) {
        groups.push({ row, reason: keyProblem(plan, wrong, row.raw) });
        continue;
      }
      const order = first === undefined ? 1 : compareKeys(key, first.key, keyCount);
      if (order < 0) throw outOfOrder(plan, row.name(), first!.key);
      if (order > 0) close();
      if (first === undefined) first = row;
      else {
        more ??= [];
        if (more.length + 1 >= MAX_ROWS_OF_ONE_KEY) {
          throw new MappingError(
            `sync.tables.${plan.table}: the source returns more than ${MAX_ROWS_OF_ONE_KEY} rows with the key (${plan.keys.join(', ')}) ${key.join(', ')}: the key must name one row (is it the table's key?)`,
          );
        }
        more.push(row);
      }
    }
    if (groups.length > 0) {
      yield groups;
      groups = [];
    }
  }
  close();
  if (groups.length > 0) yield groups;
}

/**
 * Fills `key` with the key as vidfeeds stores it, of a row (its columns by name) or of the key's
 * own values (in the order of the plan's keys: SyncSource's `keys`); the index of the first
 * column that cannot be stored (not an integer, or null), else -1.
 */
export function readKey(plan: TablePlan, raw: Record<string, unknown> | readonly unknown[], key: number[]): number {
  const named = !Array.isArray(raw);
  let wrong = -1;
  for (let i = 0; i < key.length; i++) {
    const value = normaliseValue(plan.specs[i]!, named ? (raw as Record<string, unknown>)[plan.keys[i]!] : (raw as readonly unknown[])[i]);
    if (wrong < 0 && (value === WRONG || value === null)) wrong = i;
    key[i] = value as number;
  }
  return wrong;
}

/** The error of a source whose key came back out of numeric order: `row` after the key `previous`. */
export function outOfOrder(plan: TablePlan, row: string, previous: readonly number[]): MappingError {
  return new MappingError(
    `sync.tables.${plan.table}: the source returns the key (${plan.keys.join(', ')}) out of numeric order (${row} after ${previous.join(', ')}): return it as an integer (CAST it in the query)`,
  );
}

/**
 * A source row with its key; most rows are unchanged and never named, so the name is made when a
 * message needs it. A row alone with its key (nearly every row) is its own group: a sync allocates
 * no more per row than it must, since what a batch allocates decides whether it outlives V8's
 * young generation (docs/performance.md, "vidfeeds sync").
 */
class KeyedRow implements SourceRow, KeyGroup {
  private named: string | undefined;

  constructor(
    private readonly plan: TablePlan,
    private readonly read: Record<string, unknown> | DeferredRow,
    readonly key: number[],
    readonly digest: number | null | undefined,
  ) {}

  /** The row's values: a deferred row's are made now, once (most rows of a full sync never are). */
  get raw(): Record<string, unknown> {
    return isDeferred(this.read) ? this.read.values() : this.read;
  }

  name(): string {
    return (this.named ??= rowName(this.plan, this.raw));
  }

  get kept(): SourceRow {
    return this;
  }

  get others(): readonly SourceRow[] {
    return NONE;
  }

  get unstorable(): readonly UnkeyedRow[] {
    return NONE;
  }
}

/** The group of several rows of one key. */
function choose(rows: SourceRow[], hooks: GroupHooks): KeyGroup {
  // Each row's text made once, not once per comparison (a group may hold thousands).
  const texts = new Map(rows.map((row) => [row, rowText(row.raw)]));
  rows.sort((a, b) => compareText(texts.get(a)!, texts.get(b)!));
  const unstorable: UnkeyedRow[] = [];
  let at = 0;
  for (let reason = hooks.problem?.(rows[0]!) ?? null; reason !== null && at < rows.length - 1; reason = hooks.problem!(rows[at]!)) {
    unstorable.push({ row: rows[at]!, reason });
    at++;
  }
  return { key: rows[at]!.key, kept: rows[at]!, others: rows.slice(at + 1), unstorable };
}

/** Keys compare as numbers; a stored key of another type (from before the type checks) sorts after them, as SQLite sorts it. */
export function compareKeys(a: readonly unknown[], b: readonly unknown[], count: number): number {
  for (let i = 0; i < count; i++) {
    const x = a[i];
    const y = b[i];
    if (x === y) continue;
    const xn = typeof x === 'number';
    const yn = typeof y === 'number';
    if (xn && yn) return (x as number) < (y as number) ? -1 : 1;
    if (xn !== yn) return xn ? -1 : 1;
    return String(x) < String(y) ? -1 : 1;
  }
  return 0;
}

/**
 * A row's values as one text that orders rows the same way on every sync: each value with its
 * type, in the query's column order. Only rows of one key are compared, which is rare.
 */
function rowText(raw: Record<string, unknown>): string {
  let text = '';
  for (const value of Object.values(raw)) {
    if (value === null || value === undefined) text += '\u0000null';
    else if (value instanceof Uint8Array) text += `\u0000bytes ${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}`;
    else if (value instanceof Date) text += `\u0000date ${value.getTime()}`;
    else if (typeof value === 'object') text += `\u0000json ${JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}`;
    else text += `\u0000${typeof value} ${String(value)}`;
  }
  return text;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
