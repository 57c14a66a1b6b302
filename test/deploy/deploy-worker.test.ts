import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeployAfterBuilds } from '../../src/cli/watch-deploy.js';
import { tempDir } from '../helpers/temp-dir.js';
import { until } from '../helpers/until.js';

/**
 * How `watch --deploy` runs its deploys: in one process kept between them, one deploy at a time,
 * builds that finish meanwhile carried by the next, a failed or crashed deploy tried again, and a
 * stop that ends the deploy under way. The process here stands in for src/cli/deploy-worker.ts
 * (which the end-to-end tests in watch-deploy.test.ts run): it speaks the same messages, notes
 * each deploy with its pid, and ends each one as the test tells it.
 */

const STAND_IN = `
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
const [log, script] = process.argv.slice(2);
process.on('message', (message) => {
  if (message !== 'deploy') return;
  const done = existsSync(log) ? readFileSync(log, 'utf8').split('\\n').filter(Boolean).length : 0;
  const step = JSON.parse(readFileSync(script, 'utf8'))[done] ?? { code: 0, ms: 10 };
  appendFileSync(log, process.pid + ' ' + JSON.stringify(step) + '\\n');
  if (step.crash) process.exit(9);
  if (step.releasesAt !== undefined) setTimeout(() => process.send({ treeReleased: true }), step.releasesAt);
  setTimeout(() => process.send({ code: step.code }), step.ms);
});
process.on('disconnect', () => process.exit(0));
`;

let work: { dir: string; cleanup: () => void };
let deployer: DeployAfterBuilds | null = null;

beforeEach(() => {
  work = tempDir('vidfeeds-deploy-worker-');
});

afterEach(async () => {
  await deployer?.stop();
  deployer = null;
  work.cleanup();
});

/** A deployer over the stand-in, whose deploys end as `steps` say, in order; its ends noted. */
function standIn(steps: Array<{ code: number; ms: number; releasesAt?: number } | { crash: true }>) {
  const script = join(work.dir, 'worker.mjs');
  const log = join(work.dir, 'deploys.log');
  const plan = join(work.dir, 'steps.json');
  writeFileSync(script, STAND_IN);
  writeFileSync(plan, JSON.stringify(steps));
  const ends: Array<{ code: number; retryInMs: number | null }> = [];
  const released: number[] = [];
  deployer = new DeployAfterBuilds({
    args: [log, plan],
    command: [process.execPath, script],
    retryMs: 50,
    onEnd: (code, retryInMs) => ends.push({ code, retryInMs }),
    onTreeReleased: () => released.push(ends.length),
  });
  const deploys = () => {
    try {
      return readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => Number(line.split(' ')[0]));
    } catch {
      return [];
    }
  };
  return { deployer, ends, deploys, released };
}

describe('the deploys of watch --deploy', () => {
  it('runs them one at a time in one process, the builds that finish meanwhile carried by one more', async () => {
    const { deployer, ends, deploys } = standIn([{ code: 0, ms: 300 }]);
    deployer.request();
    expect(deployer.busy).toBe(true);
    // Three builds while the first deploy runs: one deploy after it carries them all.
    deployer.request();
    deployer.request();
    deployer.request();
    expect(await until(() => ends.length === 2 && !deployer.busy, 10_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(ends).toEqual([
      { code: 0, retryInMs: null },
      { code: 0, retryInMs: null },
    ]);
    const pids = deploys();
    expect(pids).toHaveLength(2);
    expect(pids[1]).toBe(pids[0]);
    expect(pids[0]).not.toBe(process.pid);
  });

  it('tries a failed deploy again in the same process, and a crashed one in a new process', async () => {
    const { deployer, ends, deploys } = standIn([{ code: 75, ms: 10 }, { crash: true }, { code: 0, ms: 10 }]);
    deployer.request();
    expect(await until(() => ends.length === 3, 10_000)).toBe(true);
    expect(ends[0]).toEqual({ code: 75, retryInMs: 50 });
    // The crash is the deploy's failure: tried again after a back-off twice as long.
    expect(ends[1]).toEqual({ code: 9, retryInMs: 100 });
    expect(ends[2]).toEqual({ code: 0, retryInMs: null });
    const [first, second, third] = deploys();
    expect(second).toBe(first);
    expect(third).not.toBe(first);
    expect(deployer.busy).toBe(false);
  });

  it('says when a deploy releases the build lock, before the deploy ends', async () => {
    const { deployer, ends, released } = standIn([{ code: 0, ms: 400, releasesAt: 20 }]);
    deployer.request();
    expect(await until(() => ends.length === 1, 10_000)).toBe(true);
    // Heard while no deploy had ended yet.
    expect(released).toEqual([0]);
  });

  it('stops the deploy under way, and starts no other', async () => {
    const { deployer, ends, deploys } = standIn([{ code: 0, ms: 60_000 }]);
    deployer.request();
    expect(await until(() => deploys().length === 1, 10_000)).toBe(true);
    deployer.request();
    await deployer.stop();
    expect(ends).toEqual([{ code: 143, retryInMs: null }]);
    expect(deployer.busy).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(deploys()).toHaveLength(1);
  });
});
