import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';

export { EXIT };

/**
 * The exit code of a command, decided in one place (`main`, through `exitCodeOf`): an error that
 * extends VidfeedsError carries its own (src/config/vidfeeds-error.ts lists them); any other is
 * a failed build, exit 1.
 */

/** A command-line mistake found after parsing (a bad combination, an unknown format). Exit code 2. */
export class UsageError extends VidfeedsError {
  constructor(message: string, cause?: unknown) {
    super(EXIT.usage, { what: message, cause });
  }
}

/**
 * Everything wrong with a command line, found before it is parsed (check-command-line.ts): unknown
 * options, missing or refused values, required options and arguments. Exit code 2. Worded as a
 * configuration's problems are: one line, or a count and one indented line each.
 */
export class CommandLineError extends VidfeedsError {
  constructor(readonly problems: readonly string[]) {
    super(EXIT.usage, {
      where: 'command line',
      what: problems.length === 1 ? problems[0]! : `${problems.length} problems:\n${problems.map((p) => `  ${p}`).join('\n')}`,
    });
  }
}

/** The exit code of a command that stopped with `error`. */
export function exitCodeOf(error: unknown): number {
  return error instanceof VidfeedsError ? error.exitCode : EXIT.failed;
}
