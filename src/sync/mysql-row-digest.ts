import type { FieldPacket } from 'mysql2';
import { bytesDigest, resultSeed, type DigestSeed } from './row-digest.js';

/**
 * MySQL and MariaDB rows digested from the bytes the server sent for them. A row of the text
 * protocol is each value in the query's order, its text (or its bytes) after its length, NULL a
 * byte that no length starts with: two rows of one result have the same bytes only when every
 * value is the same, NULL told from the empty text. The digest is XXH64 of those bytes under a
 * seed made from the sync's and the result's column definitions (src/sync/row-digest.ts,
 * `resultSeed`), so a column whose type or character set changes moves every row's digest. It
 * costs one call per row whatever the row holds: digesting the values the driver made of the
 * bytes costs several times more, and more than the driver's parse in a full sync where nothing
 * changed (`node dist/bench/row-digest-bench.js`).
 *
 * mysql2 does not hand the bytes over; its text row parser keeps the packet it parsed last
 * (`_rowParser.packet`), which is read while the row's `result` event runs, before the next
 * packet comes. A row whose packet is not there (another parser, a later mysql2), is still the
 * previous row's, or was not read to its end by the parser, has no digest (null): it is compared
 * in full, which is slower and never wrong.
 */

/** How vidfeeds digests a MySQL or MariaDB row (DigestTable keeps it, so that digests made otherwise are made again). */
export const MYSQL_ROW_DIGEST_METHOD = 'xxh64 of the row as the server sent it';

interface RowPacket {
  buffer: Buffer;
  start: number;
  offset: number;
  end: number;
}

/** A packet's header (its length and sequence number), before the row. */
const HEADER = 4;

/** The digest of each row of a query, in the order they are parsed: one call per row, as its `result` event runs. */
export function packetDigests(seed: DigestSeed, query: object, fields: readonly FieldPacket[]): () => number | null {
  const columns = fields.map((f) => [f.name, f.columnType ?? f.type, f.characterSet, f.flags, f.decimals, f.extendedTypeName ?? null, f.extendedFormat ?? null]);
  const bits = resultSeed(seed, JSON.stringify(columns));
  const parsed = query as { _rowParser?: { packet?: RowPacket } };
  // mysql2 hands every packet of a chunk over in one object it refills: the previous row's packet
  // is told by its place, which no two rows share.
  let lastBuffer: Buffer | undefined;
  let lastStart = -1;
  return () => {
    const packet = parsed._rowParser?.packet;
    if (packet === undefined || packet.offset !== packet.end || (packet.buffer === lastBuffer && packet.start === lastStart)) return null;
    lastBuffer = packet.buffer;
    lastStart = packet.start;
    const { buffer, start, end } = packet;
    // A plain view: Buffer's own subarray costs about as much again, making a Buffer of it.
    return bytesDigest(new Uint8Array(buffer.buffer, buffer.byteOffset + start + HEADER, end - start - HEADER), bits);
  };
}
