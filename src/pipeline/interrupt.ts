import { constants } from 'node:os';
import { VidfeedsError } from '../config/vidfeeds-error.js';

/**
 * Stopping a build on SIGINT or SIGTERM. The command line's handler notes the signal and the build
 * asks for it between owners (BuildDeps.stopRequested); a build run by build-steps.ts's yielding
 * driver lets the event loop turn every few milliseconds, so the handler runs while the build
 * does. The build then stops where it is: every file it wrote is flushed and recorded in the state
 * (so the next build is incremental and rewrites nothing identical), the staging folder is removed
 * and the lock released.
 */

/** The build was stopped by a signal. Exit code 128 + the signal's number (130, 143). */
export class BuildInterrupted extends VidfeedsError {
  constructor(
    readonly signal: 'SIGINT' | 'SIGTERM',
    outcome = ': the files written so far are recorded and the next build goes on from them',
  ) {
    super(128 + constants.signals[signal], { what: `stopped by ${signal}${outcome}` });
  }

  get signalNumber(): number {
    return constants.signals[this.signal];
  }
}
