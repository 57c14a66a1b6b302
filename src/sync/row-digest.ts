import { randomBytes } from 'node:crypto';

/**
 * A 53-bit digest of a source row as its driver returned it, every column the mapping's query
 * returns in the query's order, for telling an unchanged row from a changed one without reading
 * vidfeeds's stored copy (src/sync/digest-table.ts).
 *
 * Two 32-bit lanes take every column's type, length and content, each step a multiply-xor that
 * is a bijection of the lane's state, so two rows that differ somewhere never meet again in a
 * lane; a final avalanche mixes the lanes. The seed is random per vidfeeds database and table and
 * never leaves it: a site's user who writes a row's text cannot search offline for a text whose
 * digest stays the same when a moderator hides the row. Two different rows share a digest with a
 * chance of one in 2^53.
 */

export type DigestSeed = readonly [number, number];

const M1 = 0x9e3779b1;
const M2 = 0x85ebca77;
const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);

export function newDigestSeed(): DigestSeed {
  const bytes = randomBytes(8);
  return [bytes.readUInt32LE(0), bytes.readUInt32LE(4)];
}

/**
 * The digest of a row's values, in the order the driver gave them; null when a value is of a kind
 * it does not read (the row is then always compared).
 */
export function rowDigest(values: readonly unknown[], seed: DigestSeed): number | null {
  let h1 = seed[0] ^ 0xdeadbeef;
  let h2 = seed[1] ^ 0x41c6ce57;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    let text: string;
    let tag: number;
    if (value === null || value === undefined) {
      h1 = Math.imul(h1 ^ 1, M1);
      h2 = Math.imul(h2 ^ 1, M2);
      continue;
    } else if (typeof value === 'string') {
      text = value;
      tag = 2;
    } else if (typeof value === 'number' && (value | 0) === value && !Object.is(value, -0)) {
      h1 = Math.imul(Math.imul(h1 ^ 3, M1) ^ value, M1);
      h2 = Math.imul(Math.imul(h2 ^ 3, M2) ^ value, M2);
      continue;
    } else if (typeof value === 'number' || value instanceof Date) {
      F64[0] = typeof value === 'number' ? value : value.getTime();
      const kind = typeof value === 'number' ? 9 : 4;
      h1 = Math.imul(Math.imul(Math.imul(h1 ^ kind, M1) ^ U32[0]!, M1) ^ U32[1]!, M1);
      h2 = Math.imul(Math.imul(Math.imul(h2 ^ kind, M2) ^ U32[0]!, M2) ^ U32[1]!, M2);
      continue;
    } else if (typeof value === 'bigint') {
      text = value.toString();
      tag = 5;
    } else if (typeof value === 'boolean') {
      h1 = Math.imul(h1 ^ (value ? 6 : 7), M1);
      h2 = Math.imul(h2 ^ (value ? 6 : 7), M2);
      continue;
    } else if (value instanceof Uint8Array) {
      h1 = Math.imul(h1 ^ (8 + 16 * value.length), M1);
      h2 = Math.imul(h2 ^ (8 + 16 * value.length), M2);
      for (let j = 0; j < value.length; j++) {
        h1 = Math.imul(h1 ^ value[j]!, M1);
        h2 = Math.imul(h2 ^ value[j]!, M2);
      }
      continue;
    } else return null;
    h1 = Math.imul(h1 ^ (tag + 16 * text.length), M1);
    h2 = Math.imul(h2 ^ (tag + 16 * text.length), M2);
    // Two UTF-16 code units a step; the length, taken above, tells where the text ends.
    const pairs = text.length & ~1;
    for (let j = 0; j < pairs; j += 2) {
      const c = text.charCodeAt(j) | (text.charCodeAt(j + 1) << 16);
      h1 = Math.imul(h1 ^ c, M1);
      h2 = Math.imul(h2 ^ c, M2);
    }
    if (pairs < text.length) {
      h1 = Math.imul(h1 ^ text.charCodeAt(pairs), M1);
      h2 = Math.imul(h2 ^ text.charCodeAt(pairs), M2);
    }
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 0x85ebca6b) ^ Math.imul(h2 ^ (h2 >>> 13), 0xc2b2ae35);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 0x85ebca6b) ^ Math.imul(h1 ^ (h1 >>> 13), 0xc2b2ae35);
  return 0x100000000 * (h2 & 0x1fffff) + (h1 >>> 0);
}
