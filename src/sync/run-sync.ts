import type Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { ValueIssue } from '../db/decode.js';
import { openForUpdate } from '../db/open-database.js';
import { acquireBuildLock, describeHolder, LockHeldError, type BuildLock } from '../pipeline/lock.js';
import type { SkippedSourceRow } from './source-row.js';
import { SyncBusyError, SyncInterrupted } from './sync-errors.js';
import { openSource } from './open-source.js';
import type { SourceOptions, SyncSource } from './sync-source.js';
import { syncTable, type TableCounts } from './table-diff.js';
import { planTables, type TableMapping } from './table-plan.js';

/**
 * `vidfeeds sync`: brings vidfeeds's database to exactly the rows the mapping selects from the
 * site's own database, in one write transaction. In order: take the sync lock of the database,
 * open the source in one read-only snapshot, check every mapping query (nothing is written when
 * one is wrong), then sync each table in turn and commit (or, for a dry run, roll back). Any
 * error or signal before the commit rolls everything back, and a process killed outright leaves
 * an uncommitted transaction, which SQLite discards: the database is as it was, or complete.
 */

export interface SyncRequest {
  /** vidfeeds's database. */
  db: string;
  /** The source's URL. */
  from: string;
  source?: SourceOptions;
  tables: Readonly<Record<string, TableMapping>>;
  dryRun: boolean;
  /** How long to wait for another sync holding the database; 0 gives up at once (exit 75). */
  waitSeconds: number;
  command?: string;
}

export interface SyncHooks {
  skipped?(row: SkippedSourceRow): void;
  issue?(issue: ValueIssue): void;
  /** The signal that asks the sync to stop, or null; read between rows. */
  stopRequested?(): 'SIGINT' | 'SIGTERM' | null;
}

export interface SyncReport {
  source: string;
  dryRun: boolean;
  tables: Record<string, TableCounts>;
  /** Rows inserted, updated and deleted over every table. */
  changes: number;
  /** Entries the change log gained (changes, and rows that foreign keys deleted with them); 0 for a dry run. */
  logged: number;
  skipped: number;
  issues: number;
  seconds: number;
}

/** The lock file of a database's syncs: `.vidfeeds/<db file>.sync.lock` beside it. */
export function syncLockFile(db: string): string {
  return join(dirname(resolve(db)), '.vidfeeds', `${basename(db)}.sync.lock`);
}

export async function runSync(request: SyncRequest, hooks: SyncHooks = {}): Promise<SyncReport> {
  const started = performance.now();
  // The database is checked (exists, is vidfeeds's, of this version) before the source is asked anything.
  const target = openForUpdate(request.db);
  let lock: BuildLock | undefined;
  let source: SyncSource | undefined;
  try {
    lock = takeLock(request);
    source = await openSource(request.from, request.source);
    const plans = await planTables(target, source, request.tables);
    const report: SyncReport = { source: source.description, dryRun: request.dryRun, tables: {}, changes: 0, logged: 0, skipped: 0, issues: 0, seconds: 0 };
    const checkStop = () => {
      const signal = hooks.stopRequested?.() ?? null;
      if (signal !== null) throw new SyncInterrupted(signal);
    };
    begin(target, request.db);
    try {
      const before = logPosition(target);
      for (const plan of plans) {
        checkStop();
        const counts = await syncTable(target, source, plan, {
          skipped: (row) => {
            report.skipped++;
            hooks.skipped?.(row);
          },
          issue: (issue) => {
            report.issues++;
            hooks.issue?.(issue);
          },
          checkStop,
        });
        report.tables[plan.table] = counts;
        report.changes += counts.inserted + counts.updated + counts.deleted;
      }
      checkStop();
      // Nothing to write (or only looking): the transaction ends without a commit, so not even
      // SQLite's data_version moves and `watch` sees no change.
      if (request.dryRun || report.changes === 0) target.exec('ROLLBACK');
      else {
        report.logged = logPosition(target) - before;
        target.exec('COMMIT');
      }
    } finally {
      if (target.inTransaction) target.exec('ROLLBACK');
    }
    report.seconds = (performance.now() - started) / 1000;
    return report;
  } finally {
    await source?.close().catch(() => undefined);
    target.close();
    lock?.release();
  }
}

function takeLock(request: SyncRequest): BuildLock {
  const file = syncLockFile(request.db);
  mkdirSync(dirname(file), { recursive: true });
  try {
    return acquireBuildLock(request.db, { file, command: request.command ?? 'vidfeeds sync', waitSeconds: request.waitSeconds });
  } catch (error) {
    if (!(error instanceof LockHeldError)) throw error;
    throw new SyncBusyError(
      error.holder === null
        ? `database ${request.db} is locked by ${file}, which is not a vidfeeds lock file: if no sync is running, remove it`
        : `database ${request.db} is being synced by another vidfeeds: ${describeHolder(error.holder)}; wait for it to finish (--wait SECONDS)`,
    );
  }
}

/** The write transaction, taken at once so that nothing else writes between the compare and the write. */
function begin(target: Database.Database, file: string): void {
  try {
    target.exec('BEGIN IMMEDIATE');
  } catch (error) {
    if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY')) {
      throw new SyncBusyError(`database ${file} is being written by another program (SQLite's write lock stayed busy): try again later`);
    }
    throw error;
  }
}

function logPosition(target: Database.Database): number {
  return (target.prepare('SELECT coalesce(max(seq), 0) AS seq FROM change_log').get() as { seq: number }).seq;
}
