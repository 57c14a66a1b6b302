import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireBuildLock } from '../../src/lock/lock.js';
import { useTempDir } from '../helpers/temp-dir.js';

const ROOT = resolve(import.meta.dirname, '../..');

describe('npm run bench', () => {
  it('refuses to start while another run holds its cache, naming that run, before it times or removes anything', () => {
    // A cache of its own: a real bench running in this checkout holds bench-cache/'s lock.
    const cache = useTempDir();
    const runs = join(cache, 'runs');
    const lock = acquireBuildLock(runs, { command: 'npm run bench', leaseSeconds: 0 });
    try {
      const before = existsSync(runs) ? readdirSync(runs) : [];
      const result = spawnSync(process.execPath, [join(ROOT, 'dist/bench/bench.js'), '--users', '10'], {
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, VIDFEEDS_BENCH_CACHE: cache },
      });
      expect(result.stderr).toContain(`bench: another bench is running ("npm run bench", pid ${process.pid} on `);
      expect(result.status).toBe(1);
      expect(result.stdout).toBe('');
      expect(existsSync(runs) ? readdirSync(runs) : []).toEqual(before);
    } finally {
      lock.release();
    }
  });
});
