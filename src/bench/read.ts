import { openForReading } from '../db/open-database.js';
import { SiteReader } from '../db/site-reader.js';
import { readLimits } from '../formats/read-limits.js';
import type { UserPart } from '../model/views.js';

/**
 * `npm run bench:read -- <db> [--rounds N]`: what reading costs, apart from rendering and writing.
 * Inside one snapshot, as a build reads: every published user's bundle (all parts, then each part
 * alone), and every published video the way an unsharded build reads them (one statement) and the
 * way a shard of several does (a look-up each). Prints CPU time per user and per video, the best
 * of N rounds (CPU time, since the machine is shared; the best, since others' load only adds).
 * Figures and what they led to: docs/performance.md, "Reading".
 */

const PARTS: readonly UserPart[] = ['uploads', 'groups', 'friends', 'accounts', 'interests', 'playlist', 'recommendations', 'attention', 'readingList'];

function parseArgs(argv: string[]): { db: string; rounds: number } {
  let db: string | undefined;
  let rounds = 5;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--rounds') {
      rounds = Number(argv[++i]);
      if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds takes a whole number of at least 1');
    } else if (db === undefined && !arg.startsWith('--')) {
      db = arg;
    } else {
      throw new Error(`unknown argument ${arg}; usage: read.js <db> [--rounds N]`);
    }
  }
  if (db === undefined) throw new Error('usage: read.js <db> [--rounds N] (make one with `vidfeeds demo --db FILE --users 10000`)');
  return { db, rounds };
}

/** CPU milliseconds of this process, user and system. */
function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** The least CPU time `work` took in `rounds` runs, in milliseconds. */
function best(rounds: number, work: () => void): number {
  let least = Infinity;
  for (let round = 0; round < rounds; round++) {
    const started = cpuMs();
    work();
    least = Math.min(least, cpuMs() - started);
  }
  return least;
}

const { db: file, rounds } = parseArgs(process.argv.slice(2));
const db = openForReading(file);
const reader = new SiteReader(db, readLimits(8));
reader.snapshot(() => {
  const userIds = [...reader.users()].map((row) => row.id);
  const videoCount = [...reader.videos()].length;
  const perUser = (parts: readonly UserPart[]) => {
    const wanted = new Set(parts);
    return (1000 * best(rounds, () => userIds.forEach((id) => reader.userBundle(id, wanted)))) / userIds.length;
  };
  const perVideo = (lookUp: boolean) =>
    (1000 * best(rounds, () => {
      for (const entry of reader.videoEntries(undefined, { lookUp })) entry.read();
    })) / videoCount;

  const us = (value: number) => `${value.toFixed(1).padStart(7)} µs`;
  console.log(`vidfeeds read bench: ${file}, ${userIds.length} published users, ${videoCount} published videos, best of ${rounds}`);
  console.log(`user bundle, all parts  ${us(perUser(PARTS))} per user`);
  const bare = perUser([]);
  console.log(`  the user alone        ${us(bare)}`);
  for (const part of PARTS) console.log(`  + ${part.padEnd(19)}${us(perUser([part]) - bare)}`);
  console.log(`video, one statement    ${us(perVideo(false))} per video (unsharded builds)`);
  console.log(`video, look-up each     ${us(perVideo(true))} per video (shards of several)`);
});
db.close();
