import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { cli } from './cli.js';
import { startLocalS3, type LocalS3 } from './s3.js';
import { createDemoDb } from './site-fixture.js';
import { tempDir } from './temp-dir.js';

/**
 * What the deploy tests start from: a local S3-compatible store (./s3.ts), a demo site's database,
 * a configuration file and the tree built from them, in a temporary folder; started before the
 * file's tests and removed after them. Its fields are read once the tests run.
 */
export interface DeployFixture {
  s3: LocalS3;
  dir: string;
  site: ReturnType<typeof createDemoDb>;
  config: string;
  out: string;
}

export function useDeployFixture(prefix: string, demo: { users: number; seed: number }, config: Record<string, unknown>): DeployFixture {
  const fixture = {} as DeployFixture;
  let cleanup = () => {};
  beforeAll(async () => {
    fixture.s3 = await startLocalS3();
    const work = tempDir(prefix);
    cleanup = work.cleanup;
    fixture.dir = work.dir;
    fixture.site = createDemoDb(demo);
    fixture.out = join(work.dir, 'out');
    fixture.config = join(work.dir, 'vidfeeds.config.json');
    writeFileSync(fixture.config, JSON.stringify(config));
    const built = cli(['build', '--db', fixture.site.file, '--out', fixture.out, '--config', fixture.config]);
    expect(built.code, built.stderr).toBe(0);
  });
  afterAll(async () => {
    await fixture.s3?.close();
    fixture.site?.cleanup();
    cleanup();
  });
  return fixture;
}
