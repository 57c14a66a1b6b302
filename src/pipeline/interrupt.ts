import { constants } from 'node:os';

/**
 * Stopping a build on SIGINT or SIGTERM. The build is synchronous, so a signal handler on its own
 * thread would run only after it ended; `vidfeeds build` therefore builds on a worker thread
 * (src/cli/build-thread.ts) and its main thread, which stays free, sets a shared flag that the
 * build reads between documents. The build then stops where it is: every file it wrote is flushed
 * and recorded in the state (so the next build is incremental and rewrites nothing identical), the
 * staging folder is removed and the lock released.
 */

/** The build was stopped by a signal. Exit code 128 + the signal's number (130, 143). */
export class BuildInterrupted extends Error {
  constructor(readonly signal: 'SIGINT' | 'SIGTERM') {
    super(`stopped by ${signal}: the files written so far are recorded and the next build goes on from them`);
    this.name = 'BuildInterrupted';
  }

  get signalNumber(): number {
    return constants.signals[this.signal];
  }
}

/** A flag one thread raises and another reads: 0 while running, else the signal's number. */
export class InterruptFlag {
  readonly buffer: SharedArrayBuffer;
  private readonly cells: Int32Array;

  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(4)) {
    this.buffer = buffer;
    this.cells = new Int32Array(buffer);
  }

  raise(signal: 'SIGINT' | 'SIGTERM'): void {
    Atomics.compareExchange(this.cells, 0, 0, constants.signals[signal]);
  }

  /** The signal raised, or null. */
  raised(): 'SIGINT' | 'SIGTERM' | null {
    const n = Atomics.load(this.cells, 0);
    if (n === 0) return null;
    return n === constants.signals.SIGINT ? 'SIGINT' : 'SIGTERM';
  }
}
