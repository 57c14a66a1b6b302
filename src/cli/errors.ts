import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';

export { EXIT };

/**
 * The exit code of a command, decided in one place (`main`, through `exitCodeOf`): an error that
 * extends VidfeedsError carries its own (src/config/vidfeeds-error.ts lists them); any other is
 * a failed build, exit 1.
 */

/** A command-line mistake found after parsing (a bad combination, an unknown format). Exit code 2. */
export class UsageError extends VidfeedsError {
  constructor(message: string) {
    super(EXIT.usage, { what: message });
  }
}

/** The exit code of a command that stopped with `error`. */
export function exitCodeOf(error: unknown): number {
  return error instanceof VidfeedsError ? error.exitCode : EXIT.failed;
}
