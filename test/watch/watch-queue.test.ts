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

function setup() {
  const clock = new ManualScheduler();
  const runs: string[][] = [];
  const gates: Array<ReturnType<typeof deferred>> = [];
  const queue = new WatchQueue({
    debounceMs: 100,
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
  it('turns a burst of changes into one build, after the quiet period', async () => {
    const { clock, runs, gates, queue } = setup();
    for (let i = 0; i < 5; i++) {
      queue.notify(`db-${i % 2}`);
      clock.advance(60); // never 100 ms of quiet
    }
    expect(runs).toEqual([]);
    clock.advance(40);
    expect(runs).toEqual([['db-0', 'db-1']]);
    gates[0]!.resolve();
    await queue.idle();
    expect(runs).toHaveLength(1);
  });

  it('never runs two builds at once, and runs exactly once more for changes that came during a build', async () => {
    const { clock, runs, gates, queue } = setup();
    queue.notify('a');
    clock.advance(100);
    expect(queue.busy).toBe(true);
    queue.notify('b');
    clock.advance(100);
    queue.notify('c');
    clock.advance(100);
    expect(runs).toEqual([['a']]); // still the first build
    gates[0]!.resolve();
    await flush();
    expect(runs).toEqual([['a'], ['b', 'c']]);
    gates[1]!.resolve();
    await queue.idle();
    expect(runs).toHaveLength(2);
  });

  it('after a build, waits out the quiet period of a change that is still settling', async () => {
    const { clock, runs, gates, queue } = setup();
    queue.notify('a');
    clock.advance(100);
    queue.notify('b');
    gates[0]!.resolve();
    await flush();
    expect(runs).toHaveLength(1);
    clock.advance(100);
    expect(runs).toEqual([['a'], ['b']]);
    gates[1]!.resolve();
    await queue.idle();
  });

  it('goes on after a build that throws', async () => {
    const clock = new ManualScheduler();
    const errors: unknown[] = [];
    let calls = 0;
    const queue = new WatchQueue({
      debounceMs: 10,
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
    clock.advance(100);
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
