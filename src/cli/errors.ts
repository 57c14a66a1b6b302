import { ConfigError } from '../config/config.js';
import { DatabaseError } from '../db/open-database.js';
import { SchemaVersionError } from '../db/migrations.js';
import { TemplateError } from '../render/templates.js';
import { ShardStateError } from '../build/shard.js';
import { BuildRecordError } from '../build/build-record.js';
import { UnknownUserError } from '../db/user-lookup.js';

/** Exit codes, decided in one place (`main`). */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** A command-line mistake found after parsing (a bad combination, an unknown format). Exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
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
