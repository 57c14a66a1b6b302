import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Whether the file system is quiet enough to time on. After a large delete (a tree of millions of
 * files), ext4 goes on freeing for minutes and creating files is several times slower: a figure
 * taken then measures the disk's mood, not vidfeeds. The probe times what a build does most, two
 * ways, and compares each with the best this machine has shown (kept in
 * bench-cache/disk-probe.json). The bench waits while either reads high, and refuses to time when
 * it does not settle:
 *
 * - `syncedMs`: the median of 100 small files each created, written, fsynced and renamed into
 *   place, which sees a journal busy with something else;
 * - `createUs`: 2,000 small files created, written and renamed into folders of 20, without fsync,
 *   as a build creates them. This is what stays slow after a delete on a disk mounted with
 *   `discard`: ten times as long a file for minutes after a large delete, while `syncedMs` may
 *   read only a few times its quiet figure and let it through (docs/performance.md, "How to measure").
 */

const SYNCED_FILES = 100;
const CREATED_FILES = 2000;
const FILES_PER_FOLDER = 20;
/** Slower than this many times the baseline is "busy". */
const BUSY_FACTOR = 3;

export interface ProbeFigures {
  /** Median milliseconds of one create + write + fsync + rename. */
  syncedMs: number;
  /** Mean microseconds of one create + write + rename among many, without fsync. */
  createUs: number;
}

export interface ProbeResult {
  figures: ProbeFigures;
  baseline: ProbeFigures;
  busy: boolean;
}

/** The folders probes leave under a directory when asked to keep their files (see probeOnce). */
export const PROBE_FOLDER_PREFIX = '.disk-probe-';
let probes = 0;

/**
 * One probe, in a folder of its own under `dir` (PROBE_FOLDER_PREFIX), removed afterwards unless
 * `keep`. A bench keeps them until its timings are over: deleting a probe's files slows the next
 * probe on the same disk, so a bench that deleted them while it waits for a quiet disk would keep
 * the disk busy itself.
 */
export function probeOnce(dir: string, keep = false): ProbeFigures {
  const probeDir = join(dir, `${PROBE_FOLDER_PREFIX}${process.pid}-${probes++}`);
  mkdirSync(probeDir, { recursive: true });
  const body = Buffer.alloc(2300, 'x'); // a typical document
  try {
    return { syncedMs: syncedMedianMs(probeDir, body), createUs: createMeanUs(probeDir, body) };
  } finally {
    if (!keep) rmSync(probeDir, { recursive: true, force: true });
  }
}

function syncedMedianMs(probeDir: string, body: Buffer): number {
  const times: number[] = [];
  for (let i = 0; i < SYNCED_FILES; i++) {
    const started = process.hrtime.bigint();
    const aside = join(probeDir, `s${i}.tmp`);
    const fd = openSync(aside, 'w');
    writeSync(fd, body);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(aside, join(probeDir, `s${i}`));
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

function createMeanUs(probeDir: string, body: Buffer): number {
  const started = process.hrtime.bigint();
  let folder = '';
  for (let i = 0; i < CREATED_FILES; i++) {
    if (i % FILES_PER_FOLDER === 0) mkdirSync((folder = join(probeDir, `d${i}`)));
    const aside = join(probeDir, `c${i}.tmp`);
    const fd = openSync(aside, 'w');
    writeSync(fd, body);
    closeSync(fd);
    renameSync(aside, join(folder, `c${i}`));
  }
  return Number(process.hrtime.bigint() - started) / 1e3 / CREATED_FILES;
}

/** The best figures recorded in `baselineFile`, each one that is there and positive. */
function savedBaseline(baselineFile: string): Partial<ProbeFigures> {
  if (!existsSync(baselineFile)) return {};
  try {
    const saved = JSON.parse(readFileSync(baselineFile, 'utf8')) as Record<string, unknown>;
    const figure = (value: unknown) => (typeof value === 'number' && value > 0 ? value : undefined);
    // `medianMs`: the synced figure, as the file kept it before the probe also created files in bulk.
    return { syncedMs: figure(saved.syncedMs) ?? figure(saved.medianMs), createUs: figure(saved.createUs) };
  } catch {
    // An unreadable baseline is measured anew.
    return {};
  }
}

/** Probes once and judges against the best figures recorded in `baselineFile` (each updated when beaten); `keep` as probeOnce. */
export function probeDisk(dir: string, baselineFile: string, keep = false): ProbeResult {
  const figures = probeOnce(dir, keep);
  const saved = savedBaseline(baselineFile);
  const baseline: ProbeFigures = {
    syncedMs: Math.min(saved.syncedMs ?? Infinity, figures.syncedMs),
    createUs: Math.min(saved.createUs ?? Infinity, figures.createUs),
  };
  if (baseline.syncedMs !== saved.syncedMs || baseline.createUs !== saved.createUs) {
    writeFileSync(baselineFile, `${JSON.stringify({ ...baseline, at: new Date().toISOString() })}\n`);
  }
  const busy = figures.syncedMs > BUSY_FACTOR * baseline.syncedMs || figures.createUs > BUSY_FACTOR * baseline.createUs;
  return { figures, baseline, busy };
}

/** The figures of a probe against their quiet ones, for a message. */
function describeProbe({ figures, baseline }: ProbeResult): string {
  return (
    `a small file created and synced takes ${figures.syncedMs.toFixed(2)} ms (${baseline.syncedMs.toFixed(2)} ms when quiet), ` +
    `one among many created ${figures.createUs.toFixed(0)} µs (${baseline.createUs.toFixed(0)} µs when quiet)`
  );
}

/**
 * Waits (probing every `everyMs`) until the file system is quiet, for at most `maxWaitMs`; throws
 * when it is still busy then, so no figure is printed for a disk that is busy with something else.
 * With `keepProbes` the probes' files stay under `dir` (probeOnce) for the caller to remove once
 * it has timed what it waited for.
 */
export async function waitForQuietDisk(
  dir: string,
  baselineFile: string,
  log: (line: string) => void,
  { maxWaitMs = 180_000, everyMs = 10_000, keepProbes = false } = {},
): Promise<ProbeResult> {
  const started = Date.now();
  const probe = () => probeDisk(dir, baselineFile, keepProbes);
  let result = probe();
  let told = false;
  while (result.busy) {
    if (Date.now() - started >= maxWaitMs) {
      throw new Error(
        `the file system is busy (${describeProbe(result)}; more than ${BUSY_FACTOR} times slower, still after ` +
          `${Math.round(maxWaitMs / 1000)} s; a large delete may be running or settling): not timing. Run again when it is quiet ` +
          `(or remove ${baselineFile} if this machine's disk changed)`,
      );
    }
    if (!told) log(`waiting: the file system is busy (${describeProbe(result)})`);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
    result = probe();
  }
  return result;
}
