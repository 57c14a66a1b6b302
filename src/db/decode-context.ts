import type Database from 'better-sqlite3';
import { RowDecoder, type IssueSink } from './decode.js';

/** What decoding needs besides the row: where issues go, and the check of text that may not be UTF-8. */
export interface DecodeContext {
  sink: IssueSink;
  invalidUtf8: (table: string, column: string, rowId: number) => boolean;
  /** A tag's name (null: not text), looked up by id; kept per snapshot (null outside one). */
  tagName: (id: number) => string | null;
  /** A category's name (null: none, or not text), looked up by id; kept per snapshot likewise. */
  categoryById: (id: number) => string | null;
  /**
   * A video's published tag names by its list of tag ids, kept per snapshot (null outside one,
   * where rows may change between statements): videos share their few tags' combinations, and
   * naming and sorting them was a tenth of decoding a video.
   */
  tagLists: Map<string, readonly string[]> | null;
}

/** Tag names (and category names) kept per snapshot at most; the map starts again when full. */
export const TAGS_KEPT = 65_536;

/** A tag's or category's name by id from `statement`, kept in `names` while a snapshot is open (null outside one). */
export function keptName(names: Map<number, string | null> | null, id: number, statement: Database.Statement<[number], string>): string | null {
  const known = names?.get(id);
  if (known !== undefined) return known;
  const name = statement.get(id) ?? null;
  if (names !== null) {
    if (names.size >= TAGS_KEPT) names.clear();
    names.set(id, name);
  }
  return name;
}

export function decoder(ctx: DecodeContext, table: string, rowId: number | string): RowDecoder {
  return new RowDecoder(table, rowId, ctx.sink, ctx.invalidUtf8);
}

/**
 * Whether a tag or category name, read as text, may be published: better-sqlite3 reads bytes that
 * are not UTF-8 as U+FFFD, and those are left out (`unpublishedRows` names them in full builds).
 */
export function validName(name: string): boolean {
  return !name.includes('\uFFFD');
}
