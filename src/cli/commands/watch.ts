import type { Command } from 'commander';
import { resolve } from 'node:path';
import type { BuildReport } from '../../pipeline/build-report.js';
import { describeIssue } from '../../db/decode.js';
import { DEFAULT_CONFIG_FILE, loadConfig } from '../../config/config.js';
import { previewUrlWarning } from '../preview-warning.js';
import { shortName, watchInputs } from '../../watch/file-watcher.js';
import { DEFAULT_POLL_MS, WatchSession } from '../../watch/watch-session.js';
import { EXIT } from '../errors.js';
import type { Console } from '../output.js';
import { buildRequest, summaryText } from './build.js';
import { configOptions, configOverrides, nonNegativeInteger, positiveInteger, type ConfigFlags } from './shared-options.js';
import { SyncInterval } from '../../watch/sync-interval.js';
import { runSync } from '../../sync/run-sync.js';
import { syncRequest, syncSummary } from './sync.js';

interface WatchFlags extends ConfigFlags {
  db: string;
  syncEvery?: number;
  out: string;
  state?: string;
  debounce: number;
  poll: number;
}

/**
 * `vidfeeds watch`: builds, then rebuilds (incrementally) as soon as the database, the configuration
 * or a template changes, until Ctrl-C or SIGTERM. It holds the output directory's lock only while
 * it builds; on a signal it lets a running build finish and exits 0. A configuration, template or
 * database that is unusable at start stops it with exit 2, as `build` does.
 */
export function registerWatch(program: Command, io: Console, setExit: (code: number) => void): void {
  configOptions(
    program
      .command('watch')
      .description('build, then rebuild what changed as soon as the database, the configuration or a template changes (Ctrl-C stops)')
      .requiredOption('--db <file>', 'site database (SQLite); its -wal file is watched too')
      .option('--out <dir>', 'output directory', 'out')
      .option('--state <file>', 'build state file (default: .vidfeeds/<out>.state.sqlite beside the output directory)')
      .option('--debounce <ms>', 'wait this long after the first change before building (later changes do not extend it)', nonNegativeInteger('--debounce', 60_000), 0)
      .option('--poll <ms>', 'also look at the database this often, for file systems that send no events (0: never)', nonNegativeInteger('--poll', 3_600_000), DEFAULT_POLL_MS)
      .option('--sync-every <seconds>', "also run `vidfeeds sync` (the configuration's sync section) at start and then every SECONDS; a sync that changed something is built", positiveInteger('--sync-every', 86_400)),
  ).action(async (flags: WatchFlags) => {
    const request = buildRequest({ db: flags.db, out: flags.out, state: flags.state });
    const configFile = resolve(flags.config ?? DEFAULT_CONFIG_FILE);
    const load = () => loadConfig({ configFile: flags.config, overrides: configOverrides(flags) });

    const clock = () => new Date().toISOString().slice(11, 19);
    let watcher: ReturnType<typeof watchInputs> | undefined;
    // A bad configuration, template or database stops here, before a file is touched (exit 2).
    const session = new WatchSession({
      db: request.db,
      out: request.out,
      stateFile: request.stateFile,
      loadConfig: load,
      delayMs: flags.debounce,
      pollMs: flags.poll,
      onBuild: (report: BuildReport, changes) => {
        io.err(`vidfeeds: ${clock()} ${describeChanges(changes)}: ${summaryText(report)}`);
        watcher?.setTemplateDirs(session.templateDirs());
      },
      onProblem: (message) => io.err(`vidfeeds: ${clock()} ${message}`),
      // Every one, however many, as build names them: the operator must find each row left out.
      onWarning: (message) => io.err(`vidfeeds: ${message}`),
    });
    const warning = previewUrlWarning(load(), request.db);
    if (warning !== null) io.err(warning);
    // The sync's settings are checked at start (exit 2 when there is no source or no mapping),
    // then read again before each sync, so an edited mapping applies to the next one.
    if (flags.syncEvery !== undefined) syncRequest(load(), { db: flags.db }, process.env);
    const syncs =
      flags.syncEvery === undefined
        ? undefined
        : new SyncInterval({
            everyMs: flags.syncEvery * 1000,
            run: (stopping) =>
              runSync(syncRequest(load(), { db: flags.db, command: 'vidfeeds watch --sync-every' }, process.env), {
                skipped: (row) => io.err(`vidfeeds: sync: skipped ${row.table} ${row.row}: ${row.reason}`),
                issue: (issue) => io.err(`vidfeeds: sync: ${describeIssue(issue)}`),
                stopRequested: () => (stopping() ? 'SIGTERM' : null),
              }),
            onSynced: (report) => io.err(`vidfeeds: ${clock()} ${syncSummary(report)}`),
            onProblem: (error) => io.err(`vidfeeds: ${clock()} sync failed, next in ${flags.syncEvery} s: ${(error as Error).message ?? String(error)}`),
          });
    try {
      watcher = watchInputs(
        { db: request.db, config: configFile, templateDirs: session.templateDirs() },
        (kind, path) => session.changed(kind, path),
        (message) => io.err(`vidfeeds: ${message}`),
      );
      await watcher.ready();
      io.err(`vidfeeds: watching ${request.db} (and its -wal), ${configFile} and templates in ${session.templateDirs().join(', ')}; Ctrl-C stops`);
      session.start();
      syncs?.start();
      const signal = await nextSignal();
      io.err(`vidfeeds: ${signal}: stopping${session.queue.busy ? ' after the running build' : ''}`);
    } finally {
      await syncs?.stop();
      await session.stop();
      await watcher?.close();
    }
    io.err('vidfeeds: stopped');
    setExit(EXIT.ok);
  });
}

/** Resolves with the first SIGINT or SIGTERM; a second one gets the default (immediate exit). */
function nextSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolveSignal) => {
    const handler = (signal: NodeJS.Signals) => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
      resolveSignal(signal);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}

/** "site.sqlite-wal, vidfeeds.config.json changed", "start" or "retry, site.sqlite changed". */
export function describeChanges(changes: readonly string[]): string {
  const events = ['start', 'retry'].filter((e) => changes.includes(e));
  const names = [...new Set(changes.filter((c) => c.includes(':')).map((c) => shortName(c.slice(c.indexOf(':') + 1))))];
  if (names.length === 0) return events.join(', ');
  const shown = names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ');
  return [...events, `${shown} changed`].join(', ');
}
