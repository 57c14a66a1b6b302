import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Whether the file system is quiet enough to time on. After a large delete (a tree of millions of
 * files), ext4 goes on freeing for minutes and creating files is several times slower: a figure
 * taken then measures the disk's mood, not vidfeeds. The probe times what a build does most (create
 * a small file, write it, fsync, rename it into place) and compares the median with the best
 * median this machine has shown (kept in bench-cache/disk-probe.json). The bench waits while the
 * probe reads high, and refuses to time when it does not settle.
 */

const FILES = 100;
/** Slower than this many times the baseline is "busy". */
const BUSY_FACTOR = 3;

export interface ProbeResult {
  /** Median milliseconds of one create + write + fsync + rename. */
  medianMs: number;
  baselineMs: number;
  busy: boolean;
}

/** One probe: FILES small files created, synced and renamed in `dir`, then removed. */
export function probeOnce(dir: string): number {
  const probeDir = join(dir, `.disk-probe-${process.pid}`);
  mkdirSync(probeDir, { recursive: true });
  const body = Buffer.alloc(2300, 'x'); // a typical document
  const times: number[] = [];
  try {
    for (let i = 0; i < FILES; i++) {
      const started = process.hrtime.bigint();
      const aside = join(probeDir, `f${i}.tmp`);
      const fd = openSync(aside, 'w');
      writeSync(fd, body);
      fsyncSync(fd);
      closeSync(fd);
      renameSync(aside, join(probeDir, `f${i}`));
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  } finally {
    rmSync(probeDir, { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** Probes once and judges against the best median recorded in `baselineFile` (updated when beaten). */
export function probeDisk(dir: string, baselineFile: string): ProbeResult {
  const medianMs = probeOnce(dir);
  let baselineMs = medianMs;
  if (existsSync(baselineFile)) {
    try {
      const saved = (JSON.parse(readFileSync(baselineFile, 'utf8')) as { medianMs?: unknown }).medianMs;
      if (typeof saved === 'number' && saved > 0) baselineMs = Math.min(saved, medianMs);
    } catch {
      // An unreadable baseline is measured anew.
    }
  }
  if (baselineMs === medianMs) writeFileSync(baselineFile, `${JSON.stringify({ medianMs, at: new Date().toISOString() })}\n`);
  return { medianMs, baselineMs, busy: medianMs > BUSY_FACTOR * baselineMs };
}

/**
 * Waits (probing every `everyMs`) until the file system is quiet, for at most `maxWaitMs`; throws
 * when it is still busy then, so no figure is printed for a disk that is busy with something else.
 */
export async function waitForQuietDisk(
  dir: string,
  baselineFile: string,
  log: (line: string) => void,
  { maxWaitMs = 180_000, everyMs = 10_000 } = {},
): Promise<ProbeResult> {
  const started = Date.now();
  let result = probeDisk(dir, baselineFile);
  let told = false;
  while (result.busy) {
    if (Date.now() - started >= maxWaitMs) {
      throw new Error(
        `the file system is busy (a small file created and synced takes ${result.medianMs.toFixed(2)} ms, ` +
          `${BUSY_FACTOR} times more than the ${result.baselineMs.toFixed(2)} ms it takes when quiet, still after ` +
          `${Math.round(maxWaitMs / 1000)} s; a large delete may be running): not timing. Run again when it is quiet ` +
          `(or remove ${baselineFile} if this machine's disk changed)`,
      );
    }
    if (!told) log(`waiting: the file system is busy (probe ${result.medianMs.toFixed(2)} ms against ${result.baselineMs.toFixed(2)} ms quiet)`);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
    result = probeDisk(dir, baselineFile);
  }
  return result;
}
