import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROBE_FOLDER_PREFIX, probeDisk, waitForQuietDisk } from '../../src/bench/disk-probe.js';
import { compareTrees } from '../../src/bench/freshness.js';
import { tempDir } from '../helpers/temp-dir.js';


/**
 * The bench's judgement of the disk, against a baseline file the test writes: the probe's own
 * figure is whatever this machine gives, so the baselines are far below or above any real one.
 */
describe('bench disk probe', () => {
  it('calls the disk busy against a baseline far below its synced figure (as older baselines kept it), and refuses to time when it stays busy', async () => {
    const { dir } = tempDir('vidfeeds-probe-');
    const baseline = join(dir, 'disk-probe.json');
    writeFileSync(baseline, JSON.stringify({ medianMs: 1e-9 }));
    const result = probeDisk(dir, baseline);
    expect(result.busy).toBe(true);
    expect(result.baseline.syncedMs).toBe(1e-9);
    // A figure the file did not have is this probe's.
    expect(result.baseline.createUs).toBe(result.figures.createUs);
    const logged: string[] = [];
    await expect(waitForQuietDisk(dir, baseline, (l) => logged.push(l), { maxWaitMs: 0, everyMs: 0 })).rejects.toThrow(
      /the file system is busy \(a small file created and synced takes [\d.]+ ms \(0\.00 ms when quiet\), one among many created \d+ µs .*not timing/,
    );
  });

  it('calls it busy when creating many files is slow, however fast one synced file is', () => {
    const { dir } = tempDir('vidfeeds-probe-');
    const baseline = join(dir, 'disk-probe.json');
    writeFileSync(baseline, JSON.stringify({ syncedMs: 1e9, createUs: 1e-9 }));
    const result = probeDisk(dir, baseline);
    expect(result.figures.syncedMs).toBeLessThan(1e9);
    expect(result.busy).toBe(true);
  });

  it('calls it quiet against slower baselines, and keeps the better figures as the new baseline', () => {
    const { dir } = tempDir('vidfeeds-probe-');
    const baseline = join(dir, 'disk-probe.json');
    writeFileSync(baseline, JSON.stringify({ syncedMs: 1e9, createUs: 1e9 }));
    const result = probeDisk(dir, baseline);
    expect(result.busy).toBe(false);
    expect(result.figures.syncedMs).toBeGreaterThan(0);
    expect(result.figures.createUs).toBeGreaterThan(0);
    expect(JSON.parse(readFileSync(baseline, 'utf8'))).toMatchObject(result.figures);
    // The probe leaves nothing behind.
    expect(readdirSync(dir)).toEqual(['disk-probe.json']);
  });

  it('leaves its files where it made them when asked to keep them, a folder per probe', async () => {
    const { dir } = tempDir('vidfeeds-probe-');
    const baseline = join(dir, 'disk-probe.json');
    writeFileSync(baseline, JSON.stringify({ syncedMs: 1e9, createUs: 1e9 }));
    probeDisk(dir, baseline, true);
    // Judged against no quiet figure again, so the second probe is the last one whatever the disk
    // does meanwhile (one slower than the first by BUSY_FACTOR, in a loaded test run, waited for a third).
    writeFileSync(baseline, JSON.stringify({ syncedMs: 1e9, createUs: 1e9 }));
    await waitForQuietDisk(dir, baseline, () => {}, { keepProbes: true });
    const folders = readdirSync(dir).filter((name) => name.startsWith(PROBE_FOLDER_PREFIX));
    expect(folders).toHaveLength(2);
    for (const folder of folders) expect(readdirSync(join(dir, folder)).length).toBeGreaterThan(100);
  });
});

describe('bench tree comparison', () => {
  it('finds a missing file, a stray one and other bytes, and ignores dot files', () => {
    const { dir } = tempDir('vidfeeds-compare-');
    const [a, b] = [join(dir, 'a'), join(dir, 'b')];
    for (const root of [a, b]) mkdirSync(join(root, 'alice/rss'), { recursive: true });
    writeFileSync(join(a, 'alice/rss/index.rss'), 'same');
    writeFileSync(join(b, 'alice/rss/index.rss'), 'same');
    writeFileSync(join(a, '.vidfeeds-build.json'), 'record');
    expect(compareTrees(a, b)).toEqual({ files: 1, count: 0, first: [] });
    writeFileSync(join(a, 'stray'), 'x');
    writeFileSync(join(b, 'lost'), 'y');
    writeFileSync(join(b, 'alice/rss/index.rss'), 'other');
    expect(compareTrees(a, b).first.sort()).toEqual(['alice/rss/index.rss (other bytes)', 'lost (missing from the watched tree)', 'stray (only in the watched tree)']);
  });
});
