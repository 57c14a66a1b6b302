import { describe, expect, it } from 'vitest';
import { WatchQueue } from '../../src/watch/watch-queue.js';
import { ManualScheduler } from '../helpers/manual-scheduler.js';

/** The queue alone: a manual clock and builds the test finishes by hand, so nothing hangs on timing. */

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Lets promise callbacks (the queue's bookkeeping after a build) run. */
const flush = () => new Promise<void>((r) => setImmediate(r));

function setup(delayMs = 0) {
  const clock = new ManualScheduler();
  const runs: string[][] = [];
  const gates: Array<ReturnType<typeof deferred>> = [];
  const queue = new WatchQueue({
    delayMs,
    scheduler: clock,
    run: (changes) => {
      runs.push([...changes]);
      const gate = deferred();
      gates.push(gate);
      return gate.promise;
    },
  });
  return { clock, runs, gates, queue };
}

describe('watch queue', () => {
  it('starts a build at once for a change that arrives while idle', async () => {
    const { clock, runs, gates, queue } = setup();
    queue.notify('db');
    queue.notify('db-wal'); // the same commit's second event, in the same moment
    clock.advance(0);
    expect(runs).toEqual([['db', 'db-wal']]);
    expect(queue.busy).toBe(true);
    gates[0]!.resolve();
    await queue.idle();
    expect(runs).toHaveLength(1);
    expect(clock.pending).toBe(0);
  });

  it('never runs two builds at once, and runs exactly once more for changes that came during a build', async () => {
    const { clock, runs, gates, queue } = setup();
    queue.notify('a');
    clock.advance(0);
    expect(queue.busy).toBe(true);
    for (const change of ['b', 'c', 'b', 'd']) {
      queue.notify(change);
      clock.advance(1000);
      await flush();
    }
    expect(runs).toEqual([['a']]); // still the first build
    gates[0]!.resolve();
    await flush();
    expect(runs).toEqual([['a'], ['b', 'c', 'd']]); // at once, without waiting on the clock
    gates[1]!.resolve();
    await queue.idle();
    expect(runs).toHaveLength(2);
  });

  it('builds a long burst in a bounded number of builds, each change within two builds of its arrival', async () => {
    const clock = new ManualScheduler();
    const BUILD_MS = 250;
    const builds: Array<{ changes: string[]; startedAt: number }> = [];
    let now = 0;
    const queue = new WatchQueue({
      delayMs: 0,
      scheduler: clock,
      run: (changes) => {
        builds.push({ changes: [...changes], startedAt: now });
        return new Promise<void>((resolve) => clock.setTimeout(resolve, BUILD_MS));
      },
    });
    // A bulk import: 2,000 commits, one every 5 ms, for 10 s.
    const arrivals = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      arrivals.set(`c${i}`, now);
      queue.notify(`c${i}`);
      for (let step = 0; step < 5; step++) {
        clock.advance(1);
        now++;
        await flush();
      }
    }
    while (queue.busy || clock.pending > 0) {
      clock.advance(1);
      now++;
      await flush();
    }
    await queue.idle();
    // Builds ran back to back, never overlapping: at most one per build's length, plus the last.
    expect(builds.length).toBeLessThanOrEqual(10_000 / BUILD_MS + 2);
    expect(builds.length).toBeGreaterThan(1);
    for (let i = 1; i < builds.length; i++) expect(builds[i]!.startedAt - builds[i - 1]!.startedAt).toBeGreaterThanOrEqual(BUILD_MS);
    // Every change was built exactly once, by a build that started within one build's length of it.
    const built = builds.flatMap((b) => b.changes.map((c) => ({ c, startedAt: b.startedAt })));
    expect(built.map((b) => b.c).sort()).toEqual([...arrivals.keys()].sort());
    for (const { c, startedAt } of built) expect(startedAt - arrivals.get(c)!).toBeLessThanOrEqual(BUILD_MS);
  });

  it('with a delay, waits it from the first change only: later changes do not push the build back', async () => {
    const { clock, runs, gates, queue } = setup(100);
    queue.notify('a');
    clock.advance(60);
    queue.notify('b');
    clock.advance(39);
    expect(runs).toEqual([]);
    clock.advance(1);
    expect(runs).toEqual([['a', 'b']]);
    gates[0]!.resolve();
    await queue.idle();
  });

  it('goes on after a build that throws', async () => {
    const clock = new ManualScheduler();
    const errors: unknown[] = [];
    let calls = 0;
    const queue = new WatchQueue({
      delayMs: 10,
      scheduler: clock,
      run: () => {
        calls++;
        if (calls === 1) throw new Error('database is locked');
      },
      onError: (error) => errors.push(error),
    });
    queue.notify('x');
    clock.advance(10);
    await queue.idle();
    queue.notify('y');
    clock.advance(10);
    await queue.idle();
    expect(calls).toBe(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(['database is locked']);
  });

  it('stop lets the running build finish and starts no other', async () => {
    const { clock, runs, gates, queue } = setup();
    queue.notify('a');
    clock.advance(0);
    queue.notify('b');
    let stopped = false;
    const stopping = queue.stop().then(() => (stopped = true));
    await flush();
    expect(stopped).toBe(false); // the build is still running
    gates[0]!.resolve();
    await stopping;
    clock.advance(1000);
    queue.notify('c');
    clock.advance(1000);
    expect(runs).toEqual([['a']]);
    expect(clock.pending).toBe(0);
  });
});
