import { createHash } from 'node:crypto';

/**
 * Sharded builds (`vidfeeds build --shard K/N`, docs/scale.md): N processes, on one machine or
 * many, each build a disjoint part of the site into the same layout, and together all of it.
 *
 * A document belongs to the shard of its top-level path segment, the username or the video id:
 * SHA-1 of its UTF-8 bytes, the first four bytes read as an unsigned big-endian integer, modulo N,
 * plus one. SHA-1 is the same everywhere (no Node version, platform or locale enters it), so every
 * machine agrees on the split without talking to the others, and a whole top-level directory
 * always belongs to one shard: merging the parts is a plain copy, and one shard's pruning never
 * meets another's files. The site-wide files (sitemap, robots.txt, ...) list the whole site and
 * are written by shard 1 alone.
 */
export interface ShardSpec {
  /** 1-based: 1 ≤ index ≤ count. */
  readonly index: number;
  readonly count: number;
}

export const MAX_SHARDS = 10_000;

/** Parses `K/N`; returns why it cannot, or the spec. */
export function parseShard(text: string): ShardSpec | { problem: string } {
  const match = /^(\d+)\/(\d+)$/.exec(text.trim());
  if (!match) return { problem: `"${text}" is not K/N (for example 2/8: the second of eight shards)` };
  const index = Number(match[1]);
  const count = Number(match[2]);
  if (count < 1 || count > MAX_SHARDS) return { problem: `the number of shards must be from 1 to ${MAX_SHARDS}, not ${count}` };
  if (index < 1 || index > count) return { problem: `the shard must be from 1 to ${count}, not ${index}` };
  return { index, count };
}

/** The shard (1..count) that owns the documents under `key/`. */
export function shardOf(key: string, count: number): number {
  if (count === 1) return 1;
  return (createHash('sha1').update(key, 'utf8').digest().readUInt32BE(0) % count) + 1;
}

/** Whether this build (sharded or not) owns the documents under `key/`. */
export function ownsKey(shard: ShardSpec | undefined, key: string): boolean {
  return shard === undefined || shard.count === 1 || shardOf(key, shard.count) === shard.index;
}

/** Whether this build writes the site-wide files: an unsharded build, or shard 1. */
export function ownsSiteFiles(shard: ShardSpec | undefined): boolean {
  return shard === undefined || shard.index === 1;
}

export function showShard(shard: ShardSpec): string {
  return `${shard.index}/${shard.count}`;
}

/** The default state file of a shard: the part is in its name (`out.shard-2-of-8.state.sqlite`). */
export function shardStateFile(file: string, shard: ShardSpec | undefined): string {
  return shard === undefined ? file : file.replace(/\.state\.sqlite$/, `.shard-${shard.index}-of-${shard.count}.state.sqlite`);
}
