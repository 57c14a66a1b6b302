import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireBuildLock } from '../../src/pipeline/lock.js';

const ROOT = resolve(import.meta.dirname, '../..');
const RUNS = join(ROOT, 'bench-cache', 'runs');

describe('npm run bench', () => {
  it('refuses to start while another run holds its cache, naming that run, before it times or removes anything', () => {
    const lock = acquireBuildLock(RUNS, { command: 'npm run bench', leaseSeconds: 0 });
    try {
      const before = existsSync(RUNS) ? readdirSync(RUNS) : [];
      const result = spawnSync(process.execPath, [join(ROOT, 'dist/bench/bench.js'), '--users', '10'], { encoding: 'utf8', timeout: 60_000 });
      expect(result.stderr).toContain(`bench: another bench is running ("npm run bench", pid ${process.pid} on `);
      expect(result.status).toBe(1);
      expect(result.stdout).toBe('');
      expect(existsSync(RUNS) ? readdirSync(RUNS) : []).toEqual(before);
    } finally {
      lock.release();
    }
  });
});
