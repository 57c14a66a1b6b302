import type { FieldPacket } from 'mysql2';
import { BufferDigests, resultSeed, type DigestSeed } from './row-digest.js';
import { DEFERRED_ROW, type DeferredRow } from './sync-source.js';

/**
 * The rows of a full sync from MySQL or MariaDB, digested from the bytes the server sent for them
 * and made into values only when asked.
 *
 * A row of the text protocol is each value in the query's order, its text (or its bytes) after its
 * length, NULL a byte that no length starts with: two rows of one result have the same bytes only
 * when every value is the same, NULL told from the empty text. The digest is XXH64 of those bytes
 * under a seed made from the sync's and the result's column definitions (src/sync/row-digest.ts,
 * `resultSeed`), so a column whose type or character set changes moves every row's digest.
 *
 * In a full sync most rows are unchanged: their digest and key are all it reads of them. So each
 * row is handed over as a DeferredRow: its digest, its key read from the bytes (integers written
 * as the driver would read them as numbers; any other key, and a row whose key bytes are not of
 * that form, is made into values at once), and its place in the bytes, from which mysql2's own
 * parser makes the values when the sync asks for them. Making every row's values would be about a
 * quarter of a no-change sync's work (docs/performance.md, "vidfeeds sync").
 *
 * mysql2 makes a result's row parser once its columns are known and keeps it in the query
 * (`_rowParser`), then reads the first row with the query's own `row` (later rows with its
 * class's). vidfeeds gives the query a `row` of its own that sets a parser in front of mysql2's
 * and hands the row on. (Not an accessor over `_rowParser`: redefining a property of the query
 * would turn it into a dictionary-mode object, which slows every access mysql2 makes to it, several
 * a row.) The bytes stay where mysql2 received them (a chunk from the
 * socket, or a packet it joined), which nothing writes again. Where the parser is not set that way
 * (another mysql2), rows come as the driver made them, with no digest: each is compared in full,
 * which is slower and never wrong (test/sync/mariadb-digests.test.ts fails if rows stop coming
 * deferred).
 */

/** How vidfeeds digests a MySQL or MariaDB row (DigestTable keeps it, so that digests made otherwise are made again). */
export const MYSQL_ROW_DIGEST_METHOD = 'xxh64 of the row as the server sent it';

/** What mysql2's text row parser reads: a packet's bytes, between `offset` (after its header) and `end`. */
interface RowPacket {
  buffer: Buffer;
  start: number;
  offset: number;
  end: number;
}

type PacketClass = new (id: number, buffer: Buffer, start: number, end: number) => RowPacket;

interface RowParser<Row> {
  next(packet: RowPacket, fields: readonly FieldPacket[], options: unknown): Row;
}

/** Digests of rows where they lie in the bytes mysql2 received (made when the first row is read: one for every query). */
let digests: BufferDigests | undefined;

/** A packet's header (its length and sequence number), before the row. */
const HEADER = 4;

/** mysql2's column types whose values it reads as numbers (mysql2's constants/types.js). */
const INTEGER_TYPES = new Set([1 /* TINY */, 2 /* SHORT */, 3 /* LONG */, 8 /* LONGLONG */, 9 /* INT24 */]);

/**
 * Makes the rows `query` (a mysql2 query, just sent) emits DeferredRows, keyed by the columns
 * `keys` and digested under `seed`; done before its columns come.
 */
export function deferRows(query: object, seed: DigestSeed, keys: readonly string[]): void {
  let fields: readonly FieldPacket[] = [];
  const read = query as ParsingQuery;
  read.on('fields', (given) => (fields = given));
  const row = (Object.getPrototypeOf(query) as Partial<ParsingQuery>).row;
  // Another mysql2, without the method: its rows come as it makes them.
  if (typeof row !== 'function') return;
  // Run for a result's first row (or its end), when its parser is set.
  read.row = function (this: ParsingQuery, packet, connection) {
    const made = this._rowParser;
    if (made !== null && !(made instanceof DeferringParser)) this._rowParser = new DeferringParser(made, fields, seed, keys);
    return row.call(this, packet, connection);
  };
}

/** What vidfeeds uses of a mysql2 query. */
interface ParsingQuery {
  on(event: 'fields', listener: (fields: FieldPacket[]) => void): void;
  _rowParser: RowParser<Record<string, unknown>> | DeferringParser | null;
  row(packet: RowPacket, connection: unknown): unknown;
}

/** Stands in front of mysql2's parser of one result: a DeferredRow for each row packet. */
class DeferringParser implements RowParser<DeferredRow> {
  private readonly bits: bigint;
  /** The index of each key column among the result's columns, when every one is an integer read as a number; else null. */
  private readonly keyColumns: number[] | null;
  private readonly lastKeyColumn: number;
  private packetClass: PacketClass | undefined;
  /** The query's options, which mysql2 hands its parser with each row. */
  private options: unknown;

  constructor(
    private readonly parser: RowParser<Record<string, unknown>>,
    private readonly fields: readonly FieldPacket[],
    seed: DigestSeed,
    private readonly keys: readonly string[],
  ) {
    const columns = fields.map((f) => [f.name, f.columnType ?? f.type, f.characterSet, f.flags, f.decimals, f.extendedTypeName ?? null, f.extendedFormat ?? null]);
    this.bits = resultSeed(seed, JSON.stringify(columns));
    // The driver names a row's values by column, the last of a name winning.
    const names = fields.map((f) => f.name);
    const at = keys.map((key) => names.lastIndexOf(key));
    this.keyColumns = at.every((i) => i >= 0 && INTEGER_TYPES.has(fields[i]!.columnType ?? -1)) ? at : null;
    this.lastKeyColumn = Math.max(-1, ...at);
  }

  next(packet: RowPacket, fields: readonly FieldPacket[], options: unknown): DeferredRow {
    const { buffer, start, end } = packet;
    const from = start + HEADER;
    const digest = (digests ??= new BufferDigests()).digest(buffer, from, end, this.bits);
    const key = this.keyColumns === null ? null : readIntegerKey(buffer, from, end, this.keyColumns, this.lastKeyColumn);
    if (key !== null) {
      this.packetClass ??= packet.constructor as PacketClass;
      this.options = options;
      return new PacketRow(key, digest, this, buffer, start, end);
    }
    const values = this.parser.next(packet, fields, options);
    return new MadeRow(this.keys.map((k) => values[k]), digest, values);
  }

  /** The values of a row read earlier, by mysql2's parser, from a packet made again over its bytes. */
  values(buffer: Buffer, start: number, end: number): Record<string, unknown> {
    return this.parser.next(new this.packetClass!(0, buffer, start, end), this.fields, this.options);
  }
}

/** A row whose values are made when asked. */
class PacketRow implements DeferredRow {
  private made: Record<string, unknown> | undefined;
  readonly integers = true;

  constructor(
    readonly key: readonly number[],
    readonly digest: number,
    private readonly parser: DeferringParser,
    private readonly buffer: Buffer,
    private readonly start: number,
    private readonly end: number,
  ) {}

  values(): Record<string, unknown> {
    return (this.made ??= this.parser.values(this.buffer, this.start, this.end));
  }

  get [DEFERRED_ROW](): true {
    return true;
  }
}

/** A row made into values as it was read (its key could not be read from its bytes). */
class MadeRow implements DeferredRow {
  readonly integers = false;
  constructor(
    readonly key: readonly unknown[],
    readonly digest: number,
    private readonly made: Record<string, unknown>,
  ) {}

  values(): Record<string, unknown> {
    return this.made;
  }

  get [DEFERRED_ROW](): true {
    return true;
  }
}

/**
 * The key of a row from its bytes (`from` to `end`): the values of the columns at `columns`, each
 * written as mysql2 reads an integer into a number that is the same (a sign, then up to 15 digits,
 * no leading zero); null when one is not (NULL, ZEROFILL's zeros, a value past 15 digits), or the
 * row is shorter than its columns.
 */
export function readIntegerKey(bytes: Buffer, from: number, end: number, columns: readonly number[], last: number): number[] | null {
  const key: number[] = new Array(columns.length);
  let found = 0;
  let at = from;
  for (let column = 0; column <= last; column++) {
    if (at >= end) return null;
    const first = bytes[at]!;
    let length: number;
    if (first < 0xfb) {
      length = first;
      at += 1;
    } else if (first === 0xfc) {
      length = bytes[at + 1]! | (bytes[at + 2]! << 8);
      at += 3;
    } else if (first === 0xfd) {
      length = bytes[at + 1]! | (bytes[at + 2]! << 8) | (bytes[at + 3]! << 16);
      at += 4;
    } else {
      // NULL (0xfb), or a length of eight bytes: no key column is either.
      if (columns.includes(column)) return null;
      if (first === 0xfb) {
        at += 1;
        continue;
      }
      if (first !== 0xfe || at + 9 > end) return null;
      const high = bytes.readUInt32LE(at + 5);
      length = bytes.readUInt32LE(at + 1) + high * 0x1_0000_0000;
      at += 9;
    }
    const index = columns.indexOf(column);
    if (index >= 0) {
      const value = integerText(bytes, at, length);
      if (value === null) return null;
      key[index] = value;
      found++;
    }
    at += length;
  }
  return found === columns.length && at <= end ? key : null;
}

/** The integer `length` bytes at `at` spell (`-`, then 1 to 15 digits, the first not 0 unless alone), or null. */
function integerText(bytes: Buffer, at: number, length: number): number | null {
  const negative = length > 0 && bytes[at] === 0x2d;
  const digits = negative ? length - 1 : length;
  if (digits < 1 || digits > 15) return null;
  let from = negative ? at + 1 : at;
  if (bytes[from] === 0x30 && (digits > 1 || negative)) return null;
  let value = 0;
  for (const stop = from + digits; from < stop; from++) {
    const digit = bytes[from]! - 0x30;
    if (digit < 0 || digit > 9) return null;
    value = value * 10 + digit;
  }
  return negative ? -value : value;
}
