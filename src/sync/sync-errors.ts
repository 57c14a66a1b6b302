import { constants } from 'node:os';
import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';

/**
 * What stops a sync before it commits. In every case vidfeeds's database is left as it was: the
 * sync writes in one transaction, rolled back on any of these.
 */

/**
 * The site's database cannot be reached now: refused or lost connection, a server shutting down
 * or out of connections. Exit code 75 (try again later).
 */
export class SourceUnavailableError extends VidfeedsError {
  constructor(message: string) {
    super(EXIT.tempfail, { what: message, hint: 'nothing was written; try again later' });
  }
}

/**
 * The sync was asked to stop (SIGINT, SIGTERM) while it waited for the source, and dropped the
 * connection there and then. A SourceUnavailableError for the drivers, which then treat the
 * connection as gone and ask it for nothing more; runSync reports the stop (SyncInterrupted).
 */
export class SourceStopped extends SourceUnavailableError {
  constructor(where: string) {
    super(`stopped while waiting for the source database (${where}): its connection was dropped`);
  }
}

/**
 * The site's database answers but refuses the login (user or password), has no database of that
 * name, or asks for a password vidfeeds was not given: the URL, `sync.passwordFile` or the account
 * needs fixing, and trying again later changes nothing. Exit code 2, as for a bad configuration.
 */
export class SourceRefusedError extends VidfeedsError {
  constructor(message: string) {
    super(EXIT.usage, { what: message, hint: 'nothing was written; fix the URL, sync.passwordFile or the account on the server' });
  }
}

/**
 * Why a server without TLS cannot be synced from when the URL asks for TLS (`parameter`): a
 * server set up so stays so, hence a SourceRefusedError, not one to try again later.
 */
export function noTls(parameter: string): string {
  return `the server does not offer TLS, which the URL asks for (${parameter}): turn TLS on in the server (vidfeeds does not fall back to clear text), or change the URL`;
}

/**
 * The mapping is wrong: a query the source refuses, a column vidfeeds's table does not have, a
 * required one missing, keys out of order. Exit code 2: the configuration needs fixing.
 */
export class MappingError extends VidfeedsError {
  constructor(message: string) {
    super(EXIT.usage, { what: message });
  }
}

/** Another sync holds vidfeeds's database, or SQLite's write lock stayed busy. Exit code 75. */
export class SyncBusyError extends VidfeedsError {
  constructor(message: string) {
    super(EXIT.tempfail, { what: message });
  }
}

/** The sync was stopped by a signal before it committed. Exit code 128 + the signal's number. */
export class SyncInterrupted extends VidfeedsError {
  constructor(readonly signal: 'SIGINT' | 'SIGTERM') {
    super(128 + constants.signals[signal], { what: `stopped by ${signal}: nothing was written, vidfeeds's database is as it was` });
  }
}

/**
 * The sync would delete more of a table than the removal guard allows: nothing was written. Exit
 * code 1, as a build the guard stops.
 */
export class SyncRemovalGuardError extends VidfeedsError {
  constructor(what: string) {
    super(EXIT.failed, {
      what,
      hint: 'nothing was written; if the mapping and the source are right, sync again with --allow-removals (or raise maxRemovalShare in the configuration)',
    });
  }
}
