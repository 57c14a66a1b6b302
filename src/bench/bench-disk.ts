import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readSync, statfsSync } from 'node:fs';
import type { DemoShape } from '../db/demo-data.js';
import { FORMATS } from '../formats/registry.js';
import { waitForQuietDisk } from './disk-probe.js';

/**
 * The disk around the bench's timings: whether the file system can hold a run, every dirty page
 * written and the disk quiet before a timed phase, the database in the page cache, and how long a
 * large delete keeps file creation slow.
 */

const n = (value: number) => Math.round(value).toLocaleString('en-US');

/**
 * How long after a large delete the bench waits before it times anything. ext4 without a journal
 * (this project's disks) reuses no inode freed less than 60 s ago, or 360 s ago while the block
 * of the inode table holding it is unwritten (`recently_deleted` in the kernel's fs/ext4/ialloc.c):
 * creating files walks past each of them. Right after a run deleted its trees, most of a floor's
 * time goes to that walk, and the disk probe's few files do not notice.
 */
export const DELETE_SETTLES_S = 390;

/**
 * Reads a file once from start to end, so its pages are in the page cache: the kernel reclaims a
 * database's cold pages between runs (docs/performance.md, "Machine"), and a build would time
 * reading them from the disk, which the floor never does.
 */
export function readThrough(file: string): void {
  const fd = openSync(file, 'r');
  try {
    const chunk = Buffer.allocUnsafe(16 * 1024 * 1024);
    while (readSync(fd, chunk, 0, chunk.length, null) > 0);
  } finally {
    closeSync(fd);
  }
}

/**
 * What a run needs on disk per user: two trees (the build's and the floor's) and the pack, with a
 * margin, scaled by what a user of the shape publishes: nearly every file has a folder of its own
 * (a user's folder, one per user format; a video's folder and its oembed/ holding its four files),
 * and every file and folder takes a 4 KB block. The compressed trees (two forms beside each
 * document, each in a block of its own) double it.
 */
const VIDEOS_PER_USER: Record<DemoShape, number> = { demo: 5, 'feed-heavy': 25 };

function needsPerUser(shape: DemoShape, only: string[] | undefined, run: RunKind): { inodes: number; bytes: number } {
  const chosen = FORMATS.filter((format) => only === undefined || only.includes(format.name));
  const userFormats = chosen.filter((format) => format.scope === 'user').length;
  const videoFiles = chosen.filter((format) => format.scope === 'video').length;
  const perTree = (userFormats > 0 ? 1 + 2 * userFormats : 0) + (videoFiles > 0 ? VIDEOS_PER_USER[shape] * (2 + videoFiles) : 0);
  // A build run: two trees, two compressed trees of about as many inodes again, and a margin; a
  // block per inode, and the pack about as large again. A freshness run makes two plain trees (the
  // watched one and the full build it is compared with) and no pack; a deploy run one plain tree
  // (the store beside it is checked when it starts: radosgw.ts).
  const trees = run === 'deploy' ? 1 : run === 'freshness' || only !== undefined ? 2 : 4;
  const inodes = perTree * trees * 1.1;
  return { inodes, bytes: inodes * 4096 * (run === 'build' ? 1.5 : 1.1) };
}

/** What a run makes: a build and its floor (with a pack), a watched tree, or a tree to deploy. */
export type RunKind = 'build' | 'freshness' | 'deploy';

/** Stops before building when the file system cannot hold the run: it fails hours in otherwise. */
export function checkRoom(runs: string, users: number[], shapes: DemoShape[], only: string[] | undefined, pairs: number, staleRuns: boolean, run: RunKind): void {
  const fs = statfsSync(runs);
  let inodes = 0;
  let bytes = 0;
  for (const shape of shapes) {
    const needs = needsPerUser(shape, only, run);
    for (const count of users) {
      // Each pair beyond the first makes another build's tree and floor's tree.
      inodes += count * needs.inodes * pairs;
      bytes += count * needs.bytes * pairs;
    }
  }
  const short: string[] = [];
  if (fs.ffree < inodes) short.push(`${n(inodes)} inodes (${n(fs.ffree)} free)`);
  if (fs.bavail * fs.bsize < bytes) short.push(`${(bytes / 1e9).toFixed(0)} GB (${((fs.bavail * fs.bsize) / 1e9).toFixed(0)} GB free)`);
  if (short.length === 0) return;
  const hint = staleRuns ? ` (the trees of an earlier run, under ${runs}, are removed only after this run: remove them first)` : '';
  const sizes = users.map(n).join(' and ');
  throw new Error(`${sizes} users of ${shapes.join(' and ')} shape${only === undefined ? '' : ` (--only ${only.join(',')})`} need about ${short.join(' and ')} on the file system of ${runs}${hint}; fewer users, one shape or --only fewer formats need less`);
}

/**
 * Writes every dirty page to disk before a timed phase: otherwise the kernel is still writing back
 * what came before (the pack, the tree of the full build) while the next phase runs, and
 * the floor measured after the pack reads high. `sync(1)`; where there is none, nothing.
 */
export function settleDisk(): void {
  try {
    execFileSync('sync', { stdio: 'ignore' });
  } catch {
    // No sync command: the phases are timed as they come.
  }
}

/**
 * Before a timed phase: every dirty page written (sync), then the file system's own measure of how
 * busy it is (disk-probe.ts). A run refuses to time while it stays busy.
 */
export async function quietDisk(runs: string, baseline: string, lines: (line: string) => void): Promise<void> {
  settleDisk();
  // The probes' files stay until the run's timings are over (disk-probe.ts), removed with its trees.
  await waitForQuietDisk(runs, baseline, lines, { keepProbes: true });
}

