/**
 * The errors a command stops with, and the exit code each means. Every error an operator can act
 * on extends VidfeedsError, which carries its exit code and its message in three parts: what is
 * wrong, where (a file, a flag, a setting, a row, an output directory), and what to do about it.
 * The command line turns an error into an exit code by asking it (src/cli/errors.ts); anything
 * else is a failed build, exit 1. An error that wraps another (a driver's, the file system's)
 * passes it as `cause`.
 *
 * Exit codes: 0 success; 1 documents failed (or a check found problems); 2 usage, configuration,
 * template or database; 75 (EX_TEMPFAIL of sysexits.h) try again later: another build holds the
 * lock; 128 + the signal's number (130 SIGINT, 143 SIGTERM) for a build stopped by a signal, as a
 * shell reports it.
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, tempfail: 75 } as const;

export interface ErrorShape {
  /** What is wrong. */
  what: string;
  /** Where: the file, flag, setting or row it is about; absent when the message names no one place. */
  where?: string;
  /** What the operator can do about it. */
  hint?: string;
  /** The error this one wraps (Error's `cause`), for a stack trace and a debugger; the message already says what it means. */
  cause?: unknown;
}

export class VidfeedsError extends Error {
  readonly what: string;
  readonly where: string | undefined;
  readonly hint: string | undefined;

  constructor(
    readonly exitCode: number,
    shape: ErrorShape,
  ) {
    super(errorMessage(shape), shape.cause === undefined ? undefined : { cause: shape.cause });
    this.name = new.target.name;
    this.what = shape.what;
    this.where = shape.where;
    this.hint = shape.hint;
  }
}

/** `where: what; hint`, each part only when given. */
export function errorMessage({ what, where, hint }: ErrorShape): string {
  return `${where === undefined ? '' : `${where}: `}${what}${hint === undefined ? '' : `; ${hint}`}`;
}
