import { ConfigError } from '../config/config-error.js';
import { DatabaseError } from '../db/open-database.js';
import { SchemaVersionError } from '../db/migrations.js';
import { TemplateError } from '../render/templates.js';
import { ShardStateError } from '../pipeline/plan/shard.js';
import { BuildRecordError } from '../pipeline/record/build-record.js';
import { UnknownUserError } from '../db/user-lookup.js';
import { LockHeldError } from '../pipeline/lock.js';
import { BuildInterrupted } from '../pipeline/interrupt.js';

/**
 * Exit codes, decided in one place (`main`, through `exitCodeOf`): 0 success; 1 documents failed
 * (or `check` / `shards check` found problems); 2 usage, configuration, template or database;
 * 75 (EX_TEMPFAIL of sysexits.h) another build holds the lock: try again later; 128 + the signal's
 * number (130 SIGINT, 143 SIGTERM) for a build stopped by a signal, as a shell reports it.
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, tempfail: 75 } as const;

/** A command-line mistake found after parsing (a bad combination, an unknown format). Exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * An error whose exit code was decided elsewhere: a build that ran on another thread reports its
 * error as a message and the code `exitCodeOf` gave it there.
 */
export class ExitError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'ExitError';
  }
}

/** Errors the operator fixes in flags, configuration, templates, the database file or a build record: exit 2. */
export function isUsageError(error: unknown): boolean {
  return (
    error instanceof UsageError ||
    error instanceof ConfigError ||
    error instanceof DatabaseError ||
    error instanceof SchemaVersionError ||
    error instanceof TemplateError ||
    error instanceof ShardStateError ||
    error instanceof BuildRecordError ||
    error instanceof UnknownUserError
  );
}

/** The exit code of a command that stopped with `error`. */
export function exitCodeOf(error: unknown): number {
  if (error instanceof ExitError) return error.exitCode;
  if (error instanceof LockHeldError) return EXIT.tempfail;
  if (error instanceof BuildInterrupted) return 128 + error.signalNumber;
  if (isUsageError(error)) return EXIT.usage;
  return EXIT.failed;
}
