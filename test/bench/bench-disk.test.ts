import { describe, expect, it } from 'vitest';
import { checkRoom, type RunKind } from '../../src/bench/bench-disk.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The bench's refusal to start a run the file system cannot hold: asked for more users than any
 * disk holds, it names what the run would need, and that need follows what the run makes.
 */
describe('bench room check', () => {
  const needed = (run: RunKind, only?: string[]): number => {
    const { dir } = tempDir('vidfeeds-room-');
    try {
      checkRoom(dir, [1e9], ['demo'], only, 1, false, run);
    } catch (error) {
      const inodes = /about ([\d,]+) inodes/.exec((error as Error).message)?.[1];
      if (inodes !== undefined) return Number(inodes.replaceAll(',', ''));
    }
    throw new Error(`checkRoom did not refuse ${run} with a count of inodes`);
  };

  it('asks a deploy run for one plain tree: a quarter of a build with its floor and compressed trees, half a freshness run', () => {
    const deploy = needed('deploy');
    expect(deploy).toBeGreaterThan(1e9 * 10);
    expect(needed('build') / deploy).toBeCloseTo(4, 3);
    expect(needed('freshness') / deploy).toBeCloseTo(2, 3);
    // A build of some formats makes no compressed trees of the others: two trees of those formats.
    expect(needed('build', ['rss']) / needed('deploy', ['rss'])).toBeCloseTo(2, 3);
  });

  it('lets a run that fits start', () => {
    const { dir } = tempDir('vidfeeds-room-');
    expect(() => checkRoom(dir, [1], ['demo'], undefined, 1, false, 'deploy')).not.toThrow();
  });
});
