import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { FieldPacket } from 'mysql2';
import { generateDemo } from '../db/demo-data.js';
import { openForWriting } from '../db/open-database.js';
import { deferRows } from '../sync/mysql-row-digest.js';
import { rowDigest } from '../sync/row-digest.js';
import type { DeferredRow } from '../sync/sync-source.js';

/**
 * `node dist/bench/row-digest-bench.js [users] [rounds]` (after `npm run build`): what digesting a
 * MySQL/MariaDB row costs beside what the driver costs to parse it, per row, on the feed-heavy
 * demo's rows as `npm run bench -- --sync` loads them (BIGINT, DOUBLE, LONGTEXT in utf8mb4, a
 * TIMESTAMP(6) `changed_at`). Each row is made into the packet the server sends for it and parsed
 * by mysql2's own text row parser, with vidfeeds's options, in memory (no server, no socket):
 * - parse: the driver alone;
 * - values: parse, then the digest of the values it made (src/sync/row-digest.ts, `rowDigest`);
 * - deferred: what a full sync reads of a row whose digest did not move (src/sync/mysql-row-digest.ts):
 *   the digest of the packet's bytes and the key read from them, no values made.
 * Prints the median of `rounds` (5) nanoseconds per row, the first round left out (warm-up).
 */

const require = createRequire(import.meta.url);
/** mysql2's own modules, which its package does not export. */
const MYSQL2 = join(dirname(require.resolve('mysql2')), 'lib');
const getTextParser = require(join(MYSQL2, 'parsers/text_parser.js')) as (fields: object[], options: object, config: object) => new (fields: object[]) => { next(packet: object, fields: object[], options: object): Record<string, unknown> };
const Packet = require(join(MYSQL2, 'packets/packet.js')) as new (id: number, buffer: Buffer, start: number, end: number) => object;
/** Bytes the socket hands over at a time. */
const CHUNK = 65_536;
const TYPES = { LONGLONG: 8, DOUBLE: 5, BLOB: 252, TIMESTAMP: 7 };
const UTF8MB4 = 224;
const BINARY = 63;
const CONFIG = { supportBigNumbers: true, dateStrings: true, timezone: 'local' };
/** The tables timed, with their keys. */
const TABLES: Record<string, string[]> = { videos: ['id'], saved_videos: ['user_id', 'video_id'], video_tags: ['video_id', 'tag_id'], users: ['id'] };

const users = Number(process.argv[2] ?? 8000);
const rounds = Number(process.argv[3] ?? 5);
const seed = [0x12345678, 0x9abcdef0] as const;

interface Table {
  keys: string[];
  fields: FieldPacket[];
  packets: object[];
}

function loadTables(): Map<string, Table> {
  const dir = mkdtempSync(join(tmpdir(), 'vidfeeds-digest-bench-'));
  try {
    const file = join(dir, 'demo.sqlite');
    const { db } = openForWriting(file);
    db.pragma('journal_mode = OFF');
    generateDemo(db, { users, seed: 1, shape: 'feed-heavy' });
    db.close();
    const source = new Database(file, { readonly: true });
    const tables = new Map(Object.entries(TABLES).map(([table, keys]) => [table, tableOf(source, table, keys)]));
    source.close();
    return tables;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The table's rows as the packets MariaDB sends for `SELECT *` of the bench's copy of it. */
function tableOf(source: Database.Database, table: string, keys: string[]): Table {
  const columns = source.prepare(`SELECT name, type FROM pragma_table_info(?)`).all(table) as Array<{ name: string; type: string }>;
  const field = (name: string, columnType: number, text: boolean) =>
    ({ name, columnType, type: columnType, characterSet: text ? UTF8MB4 : BINARY, encoding: text ? 'utf8' : 'binary', flags: 0, decimals: 0, table, schema: 'site' }) as unknown as FieldPacket;
  const fields = columns.map((c) => (/INT/i.test(c.type) ? field(c.name, TYPES.LONGLONG, false) : /REAL/i.test(c.type) ? field(c.name, TYPES.DOUBLE, false) : field(c.name, TYPES.BLOB, true)));
  fields.push(field('changed_at', TYPES.TIMESTAMP, false));
  const bodies: Buffer[] = [];
  let i = 0;
  for (const row of source.prepare(`SELECT * FROM "${table}"`).raw(true).iterate() as Iterable<unknown[]>) {
    const stamp = `2026-11-27 09:${String(10 + (i % 50)).padStart(2, '0')}:${String(i++ % 60).padStart(2, '0')}.${100_000 + (i % 900_000)}`;
    const parts = [...row, stamp].map((v) => (v === null ? Buffer.from([0xfb]) : lengthCoded(Buffer.isBuffer(v) ? v : Buffer.from(String(v), 'utf8'))));
    bodies.push(Buffer.concat([Buffer.alloc(4), ...parts]));
  }
  return { keys, fields, packets: chunked(bodies) };
}

/** Packets laid one after another in chunks of about 64 KiB, as the socket hands them to mysql2. */
function chunked(bodies: readonly Buffer[]): object[] {
  const packets: object[] = [];
  for (let at = 0; at < bodies.length; ) {
    const from = at;
    let length = 0;
    while (at < bodies.length && (at === from || length + bodies[at]!.length <= CHUNK)) length += bodies[at++]!.length;
    const chunk = Buffer.concat(bodies.slice(from, at));
    let start = 0;
    for (let b = from; b < at; b++) {
      packets.push(new Packet(0, chunk, start, start + bodies[b]!.length));
      start += bodies[b]!.length;
    }
  }
  return packets;
}

function lengthCoded(bytes: Buffer): Buffer {
  const n = bytes.length;
  const head = n < 251 ? Buffer.from([n]) : n < 65_536 ? Buffer.from([0xfc, n & 0xff, n >> 8]) : Buffer.from([0xfd, n & 0xff, (n >> 8) & 0xff, n >> 16]);
  return Buffer.concat([head, bytes]);
}

type Way = (table: Table) => number;

/** What deferRows uses of a mysql2 query: its `fields` event, its row parser, and its class's `row`. */
class BenchQuery {
  announce: ((fields: FieldPacket[]) => void) | undefined;
  _rowParser: { next(packet: object, fields: object[], options: object): unknown } | null = null;

  constructor(private readonly fields: FieldPacket[]) {}

  on(_: 'fields', listener: (fields: FieldPacket[]) => void): void {
    this.announce = listener;
  }

  row(packet: object): unknown {
    return this._rowParser!.next(packet, this.fields, {});
  }
}

/** Each way parses every packet from its start, as the driver does once. */
function rewound(packet: object): object {
  (packet as { offset: number }).offset = 4;
  return packet;
}

const WAYS: Record<string, Way> = {
  parse: ({ fields, packets }) => {
    const parser = new (getTextParser(fields, {}, CONFIG))(fields);
    let sum = 0;
    for (const packet of packets) sum += Object.keys(parser.next(rewound(packet), fields, {})).length;
    return sum;
  },
  values: ({ fields, packets }) => {
    const parser = new (getTextParser(fields, {}, CONFIG))(fields);
    let sum = 0;
    for (const packet of packets) sum += rowDigest(Object.values(parser.next(rewound(packet), fields, {})), seed) ?? 0;
    return sum;
  },
  deferred: ({ keys, fields, packets }) => {
    // As mysql2 runs a query: its columns announced, its row parser set, its first row read with the query's `row`.
    const query = new BenchQuery(fields);
    deferRows(query, seed, keys);
    query.announce?.(fields);
    query._rowParser = new (getTextParser(fields, {}, CONFIG))(fields);
    query.row(rewound(packets[0]!));
    const parser = query._rowParser as { next(packet: object, fields: object[], options: object): DeferredRow };
    let sum = 0;
    for (const packet of packets) {
      const row = parser.next(rewound(packet), fields, {});
      if (!Number.isSafeInteger(row.key[0])) throw new Error('a row whose key was not read from its bytes');
      sum += row.digest;
    }
    return sum;
  },
};

const tables = loadTables();
console.log(`row digests, feed-heavy demo of ${users} users, nanoseconds per row (median of ${rounds - 1} rounds), Node ${process.versions.node}`);
console.log(`${'table'.padEnd(14)} ${'rows'.padStart(8)} ${'bytes'.padStart(6)} ${'parse'.padStart(7)} ${'values'.padStart(7)} ${'deferred'.padStart(8)}`);
for (const [name, table] of tables) {
  const times = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    for (const [way, run] of Object.entries(WAYS)) {
      const started = process.hrtime.bigint();
      run(table);
      const ns = Number(process.hrtime.bigint() - started) / table.packets.length;
      if (round > 0) times.set(way, [...(times.get(way) ?? []), ns]);
    }
  }
  const median = (way: string) => {
    const sorted = [...times.get(way)!].sort((a, b) => a - b);
    return sorted[Math.floor((sorted.length - 1) / 2)]!;
  };
  const [parse, values, deferred] = ['parse', 'values', 'deferred'].map(median) as [number, number, number];
  const size = table.packets.reduce((sum, p) => sum + (p as { end: number }).end - (p as { start: number }).start - 4, 0) / table.packets.length;
  const cell = (n: number) => n.toFixed(0).padStart(7);
  console.log(`${name.padEnd(14)} ${String(table.packets.length).padStart(8)} ${size.toFixed(0).padStart(6)} ${cell(parse)} ${cell(values)} ${cell(deferred).padStart(8)}`);
}
