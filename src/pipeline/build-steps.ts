import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Drivers of a build's steps. A build is a generator that yields between owners (BuildRun): run
 * to its end at once here, it is an ordinary synchronous call (tests, `vidfeeds watch`); run with
 * `runStepsYielding`, it lets the event loop turn every few milliseconds, so that a process that
 * builds on its only thread still hears SIGINT and SIGTERM, and a build stops between two owners
 * (interrupt.ts). The stages know neither.
 */

export function runSteps<T>(steps: Generator<void, T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
  }
}

/** How long a build runs between two turns of the event loop. */
const TURN_EVERY_MS = 20;

export async function runStepsYielding<T>(steps: Generator<void, T>, everyMs: number = TURN_EVERY_MS): Promise<T> {
  let turned = performance.now();
  for (;;) {
    const next = steps.next();
    if (next.done === true) return next.value;
    if (performance.now() - turned >= everyMs) {
      await nextTurn();
      turned = performance.now();
    }
  }
}

/**
 * The steps, with `renew` called each time they yield: a build renews its lock's lease between
 * owners, whichever driver runs it (src/lock/lock.ts says why that is often enough).
 */
export function* renewingLease<T>(steps: Generator<void, T>, renew: () => void): Generator<void, T> {
  try {
    for (;;) {
      const next = steps.next();
      if (next.done === true) return next.value;
      renew();
      yield;
    }
  } finally {
    // Stopped early by its driver: the steps' own clean-up (their finally blocks) runs.
    steps.return(undefined as T);
  }
}
