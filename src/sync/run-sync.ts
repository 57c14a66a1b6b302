import type Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { ValueIssue } from '../db/decode.js';
import { openForUpdate } from '../db/open-database.js';
import { keepDeletedRows, loggedSince, netChangesSince } from '../db/net-changes.js';
import { changeLogPosition, tableSize } from '../db/sync-log.js';
import { describeHolder, LockHeldError, waitForBuildLock, type BuildLock } from '../lock/lock.js';
import type { MojibakeColumn } from './mojibake.js';
import { mojibakeColumns } from './mojibake-memory.js';
import type { SkippedSourceRow } from './source-row.js';
import { SyncBusyError, SyncInterrupted, SyncRemovalGuardError } from './sync-errors.js';
import { openSource } from './open-source.js';
import type { QueryWarnings, ServerMessage, SourceOptions, SyncSource } from './sync-source.js';
import { syncRows } from './table-strategies.js';
import { planTables, type TableMapping, type TablePlan } from './table-plan.js';
import { DigestTable } from './digest-table.js';
import { TableSync, type DiffHooks, type TableCounts } from './table-sync.js';
import { TableWriter } from './table-writer.js';
import { encodeMark, mappingId, SyncMarks, type Mode, type TableMarks } from './watermark-state.js';

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
  /** Read only the rows that changed since the last syncs, for the tables with a watermark column. */
  changedOnly?: boolean;
  /** How long to wait for another sync holding the database; 0 gives up at once (exit 75). */
  waitSeconds: number;
  /** The guard against mass removal; none with `--allow-removals`. */
  removalGuard?: SyncRemovalGuard;
  command?: string;
}

export interface SyncHooks {
  skipped?(row: SkippedSourceRow): void;
  issue?(issue: ValueIssue): void;
  /** The signal that asks the sync to stop, or null; read between rows, and while `--wait` waits. */
  stopRequested?(): 'SIGINT' | 'SIGTERM' | null;
  /**
   * Aborted when the sync is asked to stop (`stopRequested` then says by what): a wait for the
   * source ends at once, its connection dropped, rather than when its query returns.
   */
  stop?: AbortSignal;
  /** What the operator should fix though the sync goes on (SourceOptions.warn). */
  warn?(message: string): void;
  /** Another sync holds the database: `--wait` waits for it (what holds it). */
  waiting?(what: string): void;
}

/**
 * A sync that would delete more than `maxShare` of the rows of any table (and at least `minimum`
 * rows) stops before its commit, exit 1: a mapping edit that loses a join, or a source restored
 * from an old dump, must not empty vidfeeds's tables.
 */
export interface SyncRemovalGuard {
  maxShare: number;
  minimum: number;
}

/**
 * What was done to one table, and how: `changed` read only the changed rows, `full` compared every
 * row, `cascade` is a table not mapped whose rows went with their parent. `deleted` counts every
 * row that left the table, `cascaded` those of them a foreign key removed with their parent.
 */
export interface TableReport extends TableCounts {
  mode: 'full' | 'changed' | 'cascade';
  cascaded?: number;
  /** With --changed-only, why the table was compared in full. */
  reason?: string;
}

export interface SyncReport {
  source: string;
  dryRun: boolean;
  changedOnly: boolean;
  tables: Record<string, TableReport>;
  /** Rows inserted, updated and deleted over every table. */
  changes: number;
  /** Entries the change log gained (changes, and rows that foreign keys deleted with them); 0 for a dry run. */
  logged: number;
  skipped: number;
  issues: number;
  seconds: number;
  /** For a dry run, why the removal guard would stop the real sync. */
  removalGuard?: string;
  /**
   * Text columns whose values look like UTF-8 read as latin1 (docs/adopting.md, character sets),
   * counted in vidfeeds's rows: also those an earlier sync found and no sync has seen clean since
   * (src/sync/mojibake-memory.ts).
   */
  mojibake: MojibakeColumn[];
  /** What the operator is told once at info level: row digests of an earlier vidfeeds made again. */
  notes: string[];
  /** The warnings the source's server raised while it read each table's query (MySQL, MariaDB). */
  serverWarnings: TableWarnings[];
}

/** A table whose query the server warned about: how many warnings, over every statement of it, and the first, each once. */
export interface TableWarnings {
  table: string;
  count: number;
  messages: ServerMessage[];
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
    lock = await takeLock(request, hooks);
    const serverWarnings: TableWarnings[] = [];
    const warned = (query: string, found: QueryWarnings) => addWarnings(serverWarnings, request.tables, query, found);
    source = await openSource(request.from, { ...request.source, stop: hooks.stop, warn: hooks.warn, serverWarnings: warned });
    const plans = await planTables(target, source, request.tables);
    const report: SyncReport = { source: source.description, dryRun: request.dryRun, changedOnly: request.changedOnly ?? false, tables: {}, changes: 0, logged: 0, skipped: 0, issues: 0, seconds: 0, mojibake: [], notes: [], serverWarnings };
    const checkStop = () => {
      const signal = hooks.stopRequested?.() ?? null;
      if (signal !== null) throw new SyncInterrupted(signal);
    };
    const diffHooks: DiffHooks = {
      skipped: (row) => {
        report.skipped++;
        hooks.skipped?.(row);
      },
      issue: (issue) => {
        report.issues++;
        hooks.issue?.(issue);
      },
      checkStop,
      mojibake: (table, column, row, found) => {
        const known = report.mojibake.find((m) => m.table === table && m.column === column);
        if (known === undefined) report.mojibake.push({ table, column, rows: 1, row, found });
        else known.rows++;
      },
    };
    begin(target, request.db);
    try {
      const before = changeLogPosition(target);
      keepDeletedRows(target);
      const marks = new SyncMarks(target);
      const newMarks = new Map<string, TableMarks>();
      const digests: DigestTable[] = [];
      let firstMarks = false;
      for (const plan of plans) {
        checkStop();
        const digest = new DigestTable(target, plan, source.digests);
        digests.push(digest);
        if (digest.remade !== null) report.notes.push(digest.remade);
        const { counts, mode, mark, first } = await syncOne(target, source, plan, request, marks, new TableSync(plan, new TableWriter(target, plan), digest, diffHooks));
        firstMarks ||= first === true;
        report.tables[plan.table] = { ...counts, mode: mode.mode, ...(request.changedOnly && mode.mode === 'full' ? { reason: mode.reason } : {}) };
        if (mark !== undefined) newMarks.set(plan.table, mark);
      }
      checkStop();
      countNet(report, target, before);
      report.mojibake = mojibakeColumns(target, plans, report.mojibake, (table) => tableChanged(report.tables[table]));
      const guarded = request.removalGuard === undefined ? null : removalsPastGuard(report, (table) => tableSize(target, table), request.removalGuard);
      if (guarded !== null && !request.dryRun) throw new SyncRemovalGuardError(guarded);
      if (guarded !== null) report.removalGuard = guarded;
      // Nothing to write (or only looking): the transaction ends without a commit, so not even
      // SQLite's data_version moves and `watch` sees no change. The marks move only with changes,
      // or when a mapping has none yet: a sync that finds nothing leaves them, and its window of
      // rows to read next time only grows (src/sync/watermark-state.ts). Digests written without a
      // change (made for the first time, or marked for rows something else wrote) are kept.
      const logged = changeLogPosition(target) - before;
      const marking = !request.dryRun && (report.changes > 0 || firstMarks);
      const committing = !request.dryRun && (marking || digests.some((digest) => digest.wrote));
      if (marking) for (const [table, mark] of newMarks) marks.write(table, { ...mark, log: before + logged });
      if (committing) for (const digest of digests) digest.save(before + logged);
      if (!committing) target.exec('ROLLBACK');
      else {
        report.logged = logged;
        target.exec('COMMIT');
      }
    } finally {
      if (target.inTransaction) target.exec('ROLLBACK');
    }
    report.seconds = (performance.now() - started) / 1000;
    return report;
  } catch (error) {
    throw stopped(error, hooks);
  } finally {
    await source?.close().catch(() => undefined);
    target.close();
    lock?.release();
  }
}

/**
 * One table: only its changed rows when they were asked for and can be trusted, else a full
 * compare; and, for a table with a watermark, the marks this sync leaves for the next.
 */
async function syncOne(
  target: Database.Database,
  source: SyncSource,
  plan: TablePlan,
  request: SyncRequest,
  marks: SyncMarks,
  sync: TableSync,
): Promise<{ counts: TableCounts; mode: Mode; mark?: TableMarks; first?: boolean }> {
  const mapping = plan.watermark === null ? '' : mappingId(request.from, plan);
  // Read before the rows, in the same snapshot: rows changed after it are past it.
  const latest = plan.watermark === null ? null : encodeMark(await source.max(plan.query, plan.watermark));
  const asked: Mode = request.changedOnly ? marks.mode(plan, mapping, latest) : { mode: 'full', reason: 'asked for' };
  const mode = await syncRows(target, source, sync, asked);
  const counts = sync.finish();
  if (plan.watermark === null) return { counts, mode };
  // The first sync of a mapping reads from its own greatest watermark next time; later ones keep
  // one sync of overlap (src/sync/watermark-state.ts).
  const earlier = marks.read(plan.table);
  const first = earlier?.mapping !== mapping;
  return { counts, mode, mark: { mapping, previous: first ? latest : earlier!.latest, latest, log: 0 }, first };
}

/** Counts a query's warnings to the table it maps, keeping the first MESSAGES_KEPT distinct messages. */
function addWarnings(list: TableWarnings[], tables: Readonly<Record<string, TableMapping>>, query: string, found: QueryWarnings): void {
  const table = Object.keys(tables).find((name) => tables[name].query === query) ?? query;
  let known = list.find((w) => w.table === table);
  if (known === undefined) list.push((known = { table, count: 0, messages: [] }));
  known.count += found.count;
  for (const m of found.messages) {
    if (known.messages.length < MESSAGES_KEPT && !known.messages.some((k) => k.code === m.code && k.message === m.message)) known.messages.push(m);
  }
}

/** Distinct messages a table's warnings keep. */
const MESSAGES_KEPT = 5;

/**
 * What ended a sync that was asked to stop: the stop, whatever error the wait it cut short ended
 * with (the source's connection dropped under a query, most often).
 */
function stopped(error: unknown, hooks: SyncHooks): unknown {
  const signal = hooks.stopRequested?.() ?? null;
  return signal === null || error instanceof SyncInterrupted ? error : new SyncInterrupted(signal);
}

/** The sync's lock; a signal while `--wait` waits for it ends the wait at once. */
async function takeLock(request: SyncRequest, hooks: SyncHooks): Promise<BuildLock> {
  const file = syncLockFile(request.db);
  mkdirSync(dirname(file), { recursive: true });
  const stop = () => {
    const signal = hooks.stopRequested?.() ?? null;
    return signal === null ? null : new SyncInterrupted(signal);
  };
  try {
    const waiting = (held: LockHeldError) => hooks.waiting?.(held.holder === null ? file : `database ${request.db}, synced by ${describeHolder(held.holder)}`);
    return await waitForBuildLock(request.db, { file, command: request.command ?? 'vidfeeds sync' }, { seconds: request.waitSeconds, stop, waiting });
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

/** Whether the sync inserted, updated or deleted rows of a table (with those deleted with their parent). */
function tableChanged(counts: TableCounts | undefined): boolean {
  return counts !== undefined && counts.inserted + counts.updated + counts.deleted > 0;
}

/**
 * Each table's counts as what the sync made of each row, cascades included: a row a foreign key
 * deleted with its parent is deleted (`cascaded`), one whose reference it cleared (ON DELETE SET
 * NULL: a video of a deleted category) updated, and one it deleted that the sync then wrote again
 * (the videos of a user whose id changed) updated, or unchanged when it came back as it was, not
 * deleted and inserted: the removal guard counts only rows that left. The change log has every
 * write; a table whose entries are exactly the sync's own writes needs no more reading.
 */
function countNet(report: SyncReport, target: Database.Database, before: number): void {
  for (const [table, logged] of loggedSince(target, before)) {
    const counts = (report.tables[table] ??= { inserted: 0, updated: 0, deleted: 0, unchanged: 0, skipped: 0, mode: 'cascade' });
    if (logged.inserted === counts.inserted && logged.updated === counts.updated && logged.deleted === counts.deleted) continue;
    const net = netChangesSince(target, table, before);
    // Rows the sync wrote that came to nothing, less rows it found equal after a cascade had changed them.
    counts.unchanged = Math.max(0, counts.unchanged + counts.inserted + counts.updated - net.inserted - net.updated);
    if (net.deleted > counts.deleted) counts.cascaded = net.deleted - counts.deleted;
    Object.assign(counts, net);
  }
  report.changes = Object.values(report.tables).reduce((n, c) => n + c.inserted + c.updated + c.deleted, 0);
}

/**
 * Which tables lose more rows than the guard allows, as a sentence; null when none does. A table
 * held before the sync what it holds now, less what the sync inserted, plus what it deleted: it
 * is counted only when it lost at least the guard's minimum, so that a sync deleting little
 * counts nothing.
 */
function removalsPastGuard(report: SyncReport, sizeNow: (table: string) => number, guard: SyncRemovalGuard): string | null {
  const past: string[] = [];
  for (const [table, counts] of Object.entries(report.tables)) {
    if (counts.deleted === 0 || counts.deleted < guard.minimum) continue;
    const before = sizeNow(table) - counts.inserted + counts.deleted;
    if (counts.deleted > guard.maxShare * before) past.push(`${table} ${counts.deleted} of ${before} rows (${percent(counts.deleted / before)})`);
  }
  if (past.length === 0) return null;
  return `the sync would delete ${past.join(', ')}: more than maxRemovalShare allows (${percent(guard.maxShare)} of a table, and at least ${guard.minimum} rows)`;
}

function percent(share: number): string {
  return `${Math.round(share * 1000) / 10}%`;
}
