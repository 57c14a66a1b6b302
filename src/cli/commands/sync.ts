import type { Command } from 'commander';
import { resolve } from 'node:path';
import type { SiteConfig } from '../../config/site-config.js';
import { describeIssue, type ValueIssue } from '../../db/decode.js';
import { runSync, type SyncHooks, type SyncRemovalGuard, type SyncReport, type SyncRequest, type TableWarnings } from '../../sync/run-sync.js';
import { bytesExpression } from '../../sync/mojibake.js';
import { SkipSummary } from '../../sync/skip-summary.js';
import type { SkippedSourceRow } from '../../sync/source-row.js';
import { EXIT, UsageError } from '../errors.js';
import { reportHead } from '../json-report.js';
import { runCommand, waitSeconds, type CommandRun, type Ending } from '../command-runner.js';
import type { Console } from '../output.js';
import { requireOption } from '../check-command-line.js';
import { databaseOf, exitCodesHelp, readSettings, removalGuardOf } from './shared-options.js';
import { quoted } from '../../config/shown-text.js';

interface SyncFlags {
  db?: string;
  config?: string;
  from?: string;
  dryRun?: boolean;
  changedOnly?: boolean;
  wait?: number;
  allowRemovals?: boolean;
  json?: boolean;
  quiet?: boolean;
}

/**
 * `vidfeeds sync`: brings vidfeeds's database to the rows the site's own database maps to it
 * (`sync.tables` in the configuration; docs/adopting.md), writing only the rows that differ, in one
 * transaction. Exit 0 (rows skipped with reasons are named, not failures), 2 a bad flag,
 * configuration or mapping (nothing written), 75 the source unreachable or another sync running.
 */
export function registerSync(program: Command, io: Console, setExit: (code: number) => void): void {
  const command = program
    .command('sync')
    .description("bring the site database to the rows of the site's own database (MySQL/MariaDB, PostgreSQL, SQLite), writing only what differs");
  requireOption(command, '--db <file>', "vidfeeds's site database (SQLite, created by `vidfeeds init`)", 'db');
  exitCodesHelp(command, {
    0: 'synced (rows skipped with reasons are named, not failures)',
    1: 'the sync would delete more of a table than maxRemovalShare allows: nothing was written (--allow-removals)',
    2: 'bad flags, configuration or mapping, or the source refused the login, has no such database or host, or has no TLS where the URL asks for it: nothing was written',
    75: 'the source is unreachable, dropped the connection or stayed silent past sync.readTimeoutSeconds, or another sync holds the database (try again later, or --wait SECONDS): nothing was written',
    130: 'stopped by SIGINT (143: SIGTERM): nothing was written',
  })
    .option('--config <file>', 'configuration file with the `sync` section (default: vidfeeds.config.json if present)')
    .option('--from <url>', 'the source: mysql://, mariadb://, postgres://, postgresql:// or sqlite: URL (overrides sync.from)')
    .option('--dry-run', 'report the inserts, updates and deletes per table without writing them')
    .option('--changed-only', "for tables with a watermark column (sync.tables.<table>.watermark): read only the rows changed since the last syncs, and the keys (for deletions); a full compare stays the reference (docs/adopting.md)")
    .option('--wait <seconds>', 'when another sync holds the database, wait up to this long for it (default 0: exit 75 at once)', waitSeconds)
    .option('--allow-removals', 'let the sync delete more than maxRemovalShare of a table (otherwise such a sync stops, exit 1, writing nothing)')
    .option('--json', 'print one JSON object on stdout: counts per table, rows skipped with reasons, values replaced, seconds')
    .option('--quiet', 'print only problems (skipped rows, replaced values, errors): no summary')
    .action((flags: SyncFlags) => runCommand({ name: 'sync', json: flags.json, io, setExit }, (runner) => syncAction(flags, io, runner)));
}

/** `vidfeeds sync`, once its flags are parsed. */
async function syncAction(flags: SyncFlags, io: Console, runner: CommandRun): Promise<Ending> {
  const skipped: SkippedSourceRow[] = [];
  const issues: ValueIssue[] = [];
  const problems = syncProblems(io, flags.json ? { skipped, issues } : undefined);
  const { site: config, run } = readSettings(flags, io);
  const request = syncRequest(
    config,
    { db: databaseOf(flags.db, run), from: flags.from, dryRun: flags.dryRun, changedOnly: flags.changedOnly, wait: flags.wait, removalGuard: removalGuardOf(flags, run) },
    runner.env.variables,
  );
  const stop = runner.stopOnSignal((signal) => io.log.warn(`${signal}: stopping the sync; nothing is written`));
  // A sync that stops with an error names what it skipped up to then; a bad flag or mapping, only itself.
  runner.reportErrorsAs((error, exitCode) => JSON.stringify({ ...reportHead('sync', exitCode), error: (error as Error).message, skipped, issues }));
  let report: SyncReport;
  try {
    const waiting = (what: string) => io.log.info(`waiting up to ${request.waitSeconds} s for the lock: ${what}`);
    report = await runSync(request, { ...problems.hooks, stopRequested: stop.requested, stop: stop.aborted, waiting });
  } catch (error) {
    problems.flush();
    throw error;
  }
  problems.flush(report);
  if (!flags.quiet) io.log.info(syncSummary(report));
  return { exitCode: EXIT.ok, report: () => JSON.stringify({ ...reportHead('sync', EXIT.ok), ...report, skipped, issues }) };
}

/**
 * How a sync tells of the rows it skipped and the values it replaced: every one at debug level,
 * else one line per kind once the sync ends (`flush`), with the columns that look like UTF-8 read
 * as latin1. `keep` collects every one for --json.
 */
export function syncProblems(io: Console, keep?: { skipped: SkippedSourceRow[]; issues: ValueIssue[] }) {
  const each = io.log.enabled('debug');
  const skips = new SkipSummary();
  const replaced = new SkipSummary();
  const hooks: Pick<SyncHooks, 'skipped' | 'issue' | 'warn'> = {
    warn: (message) => io.log.warn(`sync: ${message}`),
    skipped: (row) => {
      keep?.skipped.push(row);
      if (each) io.log.warn(`sync: skipped ${row.table} ${row.row}: ${row.reason}`);
      else skips.add(`${row.table} ${row.reason}`, `${row.table} ${row.row}: ${row.reason}`);
    },
    issue: (issue) => {
      keep?.issues.push(issue);
      if (each) io.log.warn(`sync: ${describeIssue(issue)}`);
      else replaced.add(`${issue.table} ${issue.column} ${issue.expected} ${issue.outcome}`, describeIssue(issue));
    },
  };
  const flush = (report?: SyncReport) => {
    for (const line of [...skips.lines('sync: skipped'), ...replaced.lines('sync: replaced')]) io.log.warn(line);
    for (const m of report?.mojibake ?? []) {
      io.log.warn(
        `sync: ${m.table}.${m.column} holds text that looks like UTF-8 read as latin1 in ${m.rows} ${m.rows === 1 ? 'row' : 'rows'} (${m.table} ${m.row}: ${quoted(m.found.slice(0, 60))}): ` +
          `a latin1 column holding UTF-8 bytes is mapped as ${bytesExpression(report!.source)} (docs/adopting.md, "Character sets")`,
      );
    }
    for (const w of report?.serverWarnings ?? []) io.log.warn(serverWarningsLine(w));
  };
  return { hooks, flush };
}

/** The warnings the server raised reading a table's query, in one line with the first few of them. */
export function serverWarningsLine(w: TableWarnings): string {
  const shown = w.messages.slice(0, 3).map((m) => `${m.message} (${m.code})`);
  const more = w.messages.length > shown.length || w.count > shown.length ? ', ...' : '';
  return (
    `sync: the server sent ${w.count.toLocaleString('en-US')} ${w.count === 1 ? 'warning' : 'warnings'} for the query of ${w.table}: ${shown.join(', ')}${more}: ` +
    'a value the query converts may not be what the site meant (docs/adopting.md, "The mapping")'
  );
}

/** What a sync needs from the configuration, the flags and the environment (for `sync.fromEnv`, and PGPASSWORD). */
export function syncRequest(
  config: SiteConfig,
  flags: { db: string; from?: string; dryRun?: boolean; changedOnly?: boolean; wait?: number; command?: string; removalGuard?: SyncRemovalGuard },
  env: Readonly<Record<string, string | undefined>>,
): SyncRequest {
  const fromEnv = config.sync.fromEnv === null ? undefined : env[config.sync.fromEnv];
  const from = flags.from ?? config.sync.from ?? (fromEnv === '' ? undefined : fromEnv);
  if (from === undefined) {
    throw new UsageError(
      config.sync.fromEnv === null
        ? 'no source to sync from: give --from URL, or sync.from or sync.fromEnv in the configuration (docs/adopting.md)'
        : `no source to sync from: the environment variable ${config.sync.fromEnv} (sync.fromEnv) is not set, and neither --from nor sync.from gives one`,
    );
  }
  const tables = Object.fromEntries(
    Object.entries(config.sync.tables).map(([table, map]) => {
      const { query, decodeEntities = [], watermark = null } = typeof map === 'string' || Array.isArray(map) ? { query: map } : map;
      return [table, { query: Array.isArray(query) ? query.join('\n') : query, decodeEntities, watermark }];
    }),
  );
  if (Object.keys(tables).length === 0) throw new UsageError('sync.tables maps no table: write one SELECT per vidfeeds table in the configuration (docs/adopting.md)');
  return {
    db: resolve(flags.db),
    from,
    source: { passwordFile: config.sync.passwordFile, readTimeoutSeconds: config.sync.readTimeoutSeconds, environmentPassword: env.PGPASSWORD },
    tables,
    dryRun: flags.dryRun ?? false,
    changedOnly: flags.changedOnly ?? false,
    waitSeconds: flags.wait ?? 0,
    command: flags.command,
    removalGuard: flags.removalGuard,
  };
}

/** One line: what was (or would be) changed, per table, and what was skipped; after a line per note of the report. */
export function syncSummary(report: SyncReport): string {
  const verb = report.dryRun ? 'would make' : 'made';
  const perTable = Object.entries(report.tables)
    .filter(([, c]) => c.inserted + c.updated + c.deleted > 0)
    .map(([table, c]) => {
      const deleted = c.deleted && `-${c.deleted}${c.cascaded ? ` (${c.cascaded} with their parent)` : ''}`;
      return `${table} ${[c.inserted && `+${c.inserted}`, c.updated && `~${c.updated}`, deleted].filter(Boolean).join(' ')}`;
    });
  const changed = Object.values(report.tables).filter((t) => t.mode === 'changed').length;
  const mapped = Object.values(report.tables).filter((t) => t.mode !== 'cascade').length;
  const extra = [
    report.skipped > 0 ? `${report.skipped} rows skipped` : '',
    report.issues > 0 ? `${report.issues} bad values replaced` : '',
    report.changedOnly ? `changed rows only in ${changed} of ${mapped} tables` : '',
  ].filter(Boolean);
  return (
    report.notes.map((note) => `sync: ${note}\n`).join('') +
    `sync from ${report.source}${report.dryRun ? ' (dry run, nothing written)' : ''}: ${verb} ${report.changes} ${report.changes === 1 ? 'change' : 'changes'}` +
    `${perTable.length > 0 ? ` (${perTable.join(', ')})` : ''}${extra.length > 0 ? `, ${extra.join(', ')}` : ''} in ${report.seconds.toFixed(2)}s` +
    (report.removalGuard === undefined ? '' : `; a real sync would stop: ${report.removalGuard}`)
  );
}
