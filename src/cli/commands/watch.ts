import type { Command } from 'commander';
import { resolve } from 'node:path';
import type { BuildReport } from '../../pipeline/build-report.js';
import { DEFAULT_CONFIG_FILE, loadSettings } from '../../config/load-config.js';
import type { RunSettings } from '../../config/run-settings.js';
import type { SiteConfig } from '../../config/site-config.js';
import { checkDatabaseFile } from '../../db/open-database.js';
import { requireOption } from '../check-command-line.js';
import { previewUrlWarning } from '../preview-warning.js';
import { shortName, watchInputs } from '../../watch/file-watcher.js';
import { DEFAULT_POLL_MS, WatchSession } from '../../watch/watch-session.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { runCommand, type CommandRun, type Ending } from '../command-runner.js';
import type { CommandEnvironment } from '../environment.js';
import { buildRequest, summaryFields, summaryText, type BuildRequest } from './build.js';
import { configOptions, configOverrides, databaseOf, exitCodesHelp, nonNegativeInteger, outOf, positiveInteger, readSettings, removalGuardOf, stateOf, strictOption, type ConfigFlags } from './shared-options.js';
import { VIDFEEDS_VERSION } from '../../config/version.js';
import { FORMATS } from '../../formats/registry.js';
import { SitePaths } from '../../paths/site-paths.js';
import { routesOf } from '../../hosting/routes.js';
import { changesOfFiles } from '../../deploy/change-set.js';
import { NotifyBatcher } from '../../deploy/notify-batch.js';
import { buildNotifySettings, type AnnounceFlags } from '../announce.js';
import { reportDeliveries } from '../notify-report.js';
import { SyncInterval } from '../../watch/sync-interval.js';
import { runSync, type SyncReport } from '../../sync/run-sync.js';
import { syncProblems, syncRequest, syncSummary } from './sync.js';
import { DeployAfterBuilds, watchDeployArgs, type WatchDeployFlags } from '../watch-deploy.js';

interface WatchFlags extends ConfigFlags, AnnounceFlags, WatchDeployFlags {
  notifyDelay: number;
  db?: string;
  out?: string;
  syncEvery?: number;
  syncChangedOnly?: boolean;
  state?: string;
  debounce: number;
  poll: number;
  allowRemovals?: boolean;
}

/**
 * `vidfeeds watch`: builds, then rebuilds (incrementally) as soon as the database, the configuration
 * or a template changes, until Ctrl-C or SIGTERM. It holds the output directory's lock only while
 * it builds; on a signal it lets a running build finish and exits 0. A configuration, template or
 * database that is unusable at start stops it with exit 2, as `build` does.
 */
export function registerWatch(program: Command, io: Console, setExit: (code: number) => void): void {
  const command = program
    .command('watch')
    .description('build, then rebuild what changed as soon as the database, the configuration or a template changes (Ctrl-C stops)');
  requireOption(command, '--db <file>', 'site database (SQLite); its -wal file is watched too', 'db');
  exitCodesHelp(strictOption(configOptions(
    command
      .option('--out <dir>', 'output directory (default: out, or `out` in the configuration)')
      .option('--state <file>', 'build state file (default: `state` in the configuration, else .vidfeeds/<out>.state.sqlite beside the output directory)')
      .option('--allow-removals', 'let builds remove more than maxRemovalShare of the published documents (otherwise such a build is reported and the tree kept)')
      .option('--debounce <ms>', 'wait this long after the first change before building (later changes do not extend it)', nonNegativeInteger('--debounce', 60_000), 0)
      .option('--poll <ms>', 'also look at the database this often, for file systems that send no events (0: never)', nonNegativeInteger('--poll', 3_600_000), DEFAULT_POLL_MS)
      .option('--sync-every <seconds>', "also run `vidfeeds sync` (the configuration's sync section) at start and then every SECONDS; a sync that changed something is built", positiveInteger('--sync-every', 86_400))
      .option('--deploy <s3://bucket/prefix>', 'after each build, publish the tree to this object store as `vidfeeds deploy` does (incremental; one at a time, later builds carried by the next); wins over deploy.to in the configuration')
      .option('--endpoint <url>', 'with --deploy: an S3-compatible endpoint other than AWS; wins over deploy.endpoint')
      .option('--concurrency <n>', 'with --deploy: requests at once', positiveInteger('--concurrency', 256))
      .option('--tries <n>', 'with --deploy: tries per request', positiveInteger('--tries', 20))
      .option('--timeout <seconds>', 'with --deploy: longest wait for the answer to one request', positiveInteger('--timeout', 3600))
      .option('--sync-changed-only', 'with --sync-every: sync as `vidfeeds sync --changed-only` does (tables with a watermark column read only their changed rows)')
      .option('--on-change <command>', 'run COMMAND (through sh) with the changed and removed URLs on its standard input, one per line, batched like the notifications')
      .option('--no-notify', 'do not notify the WebSub hubs and IndexNow of the configuration')
      .option('--notify-delay <ms>', 'send the changes of every build within this long of the first together: one request per hub for a burst of edits', nonNegativeInteger('--notify-delay', 600_000), 2000),
  )), {
    0: 'stopped by SIGINT or SIGTERM after the running build',
    2: 'bad flags, configuration, template or database at start: nothing was touched',
  }).action((flags: WatchFlags) => runCommand({ name: 'watch', io, setExit }, (runner) => watchAction(flags, io, runner)));
}

/** The watch itself: a session of builds, the inputs' watcher, the notifications and the syncs, until a signal. */
async function watchAction(flags: WatchFlags, io: Console, runner: CommandRun): Promise<Ending> {
  io.log.withTimes();
  if (flags.syncChangedOnly && flags.syncEvery === undefined) throw new UsageError('--sync-changed-only goes with --sync-every');
  const { run } = readSettings(flags, io);
  const request = buildRequest({ db: databaseOf(flags.db, run), out: outOf(flags.out, run), state: stateOf(flags.state, run) });
  checkDatabaseFile(request.db);
  const configFile = resolve(flags.config ?? DEFAULT_CONFIG_FILE);
  // The run settings (paths, logging) are read once, at start; the site's are read again on each change.
  const load = () => loadSettings({ configFile: flags.config, overrides: configOverrides(flags) }).site;
  // Each deploy's end releases the lock a build may be waiting for.
  const hearers = buildHearers(flags, request, run.deploy, load(), io, () => session.lockReleased());
  let watcher: ReturnType<typeof watchInputs> | undefined;
  // A bad configuration, template or database stops here, before a file is touched (exit 2).
  const session = watchSession(flags, request, run, load, io, hearers, () => watcher?.setTemplateDirs(session.templateDirs()));
  const warning = previewUrlWarning(load(), request.db);
  if (warning !== null) io.log.warn(warning);
  const syncs = flags.syncEvery === undefined ? undefined : syncsEvery(flags.syncEvery, () => syncRequestOf(load(), request.db, flags, run, runner.env.variables), io);
  try {
    watcher = watchInputs(
      { db: request.db, config: configFile, templateDirs: session.templateDirs() },
      (kind, path) => {
        io.log.debug(`${kind} changed: ${path}`, { kind, path });
        session.changed(kind, path);
      },
      (message) => io.log.warn(message),
    );
    await watcher.ready();
    io.log.info(`watching ${request.db} (and its -wal), ${configFile} and templates in ${session.templateDirs().join(', ')}; Ctrl-C stops`);
    session.start();
    syncs?.start();
    const signal = await runner.stopOnSignal().heard;
    io.log.info(`${signal}: stopping${session.queue.busy ? ' after the running build' : ''}${hearers.deployer?.busy === true ? ', stopping the deploy under way' : ''}`);
  } finally {
    await syncs?.stop();
    await session.stop();
    await hearers.deployer?.stop();
    await watcher?.close();
    await hearers.batcher?.flush();
  }
  io.log.info('stopped');
  return { exitCode: EXIT.ok };
}

/**
 * Who hears of the watch's builds, as the settings at start decide: the hubs, IndexNow and the
 * `--on-change` command through a batcher, and with --deploy the deploy after each build (which
 * then tells the `--on-change` command itself, once the objects are in the store).
 */
function buildHearers(flags: WatchFlags, request: { out: string; stateFile: string }, deploy: RunSettings['deploy'], config: SiteConfig, io: Console, deployEnded: () => void) {
  const paths = new SitePaths(config.baseUrl, config.pages, FORMATS);
  // With --deploy (or deploy.to), the deploy tells the --on-change command, once the objects are in the store.
  const deployArgs = watchDeployArgs(flags, request, deploy);
  const notify = buildNotifySettings(config, paths, deployArgs === null ? flags : { ...flags, onChange: undefined });
  const deployer = deployArgs === null ? null : deployAfterBuilds(deployArgs, io, deployEnded);
  const batcher = notify === null ? null : new NotifyBatcher(notify, flags.notifyDelay, (deliveries) => reportDeliveries(deliveries, io), { userAgent: `vidfeeds/${VIDFEEDS_VERSION}` });
  return { paths, deployer, batcher };
}

/** The session of builds: each build said on stderr, its files handed to whoever hears of them. */
function watchSession(
  flags: WatchFlags,
  request: BuildRequest,
  run: RunSettings,
  load: () => SiteConfig,
  io: Console,
  { paths, deployer, batcher }: ReturnType<typeof buildHearers>,
  built: () => void,
): WatchSession {
  // The files of builds that failed part-way are live too, so they wait for the next build that finishes.
  const files = { written: [] as string[], removed: [] as string[] };
  return new WatchSession({
    db: request.db,
    out: request.out,
    stateFile: request.stateFile,
    loadConfig: load,
    delayMs: flags.debounce,
    removalGuard: removalGuardOf(flags, run),
    pollMs: flags.poll,
    onWrote: batcher === null ? undefined : (path) => files.written.push(path),
    onRemoved: batcher === null ? undefined : (path) => files.removed.push(path),
    onBuild: (report: BuildReport, changes) => {
      const line = `${describeChanges(changes)}: ${summaryText(report)}`;
      if (report.failedCount > 0) io.log.error(line, { changes, ...summaryFields(report) });
      else io.log.info(line, { changes, ...summaryFields(report) });
      batcher?.add(changesOfFiles(files.written.splice(0), files.removed.splice(0), paths, routesOf(FORMATS)));
      built();
      deployer?.request();
    },
    onProblem: (message) => io.log.error(message),
    // Every one, however many, as build names them: the operator must find each row left out.
    onWarning: (message) => io.log.warn(message),
  });
}

/** `--deploy`: a deploy after each build, one at a time; a failed one is said and tried again. */
function deployAfterBuilds(args: NonNullable<ReturnType<typeof watchDeployArgs>>, io: Console, ended: () => void): DeployAfterBuilds {
  return new DeployAfterBuilds({
    args,
    // A build that waits for the deploy's lock goes as soon as the deploy holds what it sends.
    onTreeReleased: ended,
    onEnd: (code, retryInMs) => {
      if (retryInMs !== null) io.log.error(`deploy failed (exit code ${code}): the store is behind the tree; trying again in ${Math.round(retryInMs / 1000)} s, or after the next build`);
      ended();
    },
  });
}

/**
 * The sync `--sync-every` runs, from the configuration as it is now (an edited mapping applies to
 * the next one). Asked once at start too, so that a watch whose sync has no source or no mapping
 * stops there (exit 2).
 */
function syncRequestOf(config: SiteConfig, db: string, flags: WatchFlags, run: RunSettings, env: CommandEnvironment['variables']) {
  return syncRequest(config, { db, changedOnly: flags.syncChangedOnly, command: 'vidfeeds watch --sync-every', removalGuard: removalGuardOf(flags, run) }, env);
}

/** `--sync-every`: a sync every so often, its skipped rows summarised as `sync` does; its settings are checked now. */
function syncsEvery(seconds: number, request: () => ReturnType<typeof syncRequestOf>, io: Console): SyncInterval {
  request();
  // Every sync names the columns that look like mojibake (kept between syncs), and the queries the
  // server warned about: the watch says so when one is new or its count moved, not every few seconds.
  let warned = new Map<string, number>();
  const news = (report: SyncReport): SyncReport => {
    const fresh = report.mojibake.filter((m) => warned.get(`${m.table}.${m.column}`) !== m.rows);
    const freshWarnings = report.serverWarnings.filter((w) => warned.get(`${w.table} query`) !== w.count);
    warned = new Map([...report.mojibake.map((m) => [`${m.table}.${m.column}`, m.rows] as const), ...report.serverWarnings.map((w) => [`${w.table} query`, w.count] as const)]);
    return { ...report, mojibake: fresh, serverWarnings: freshWarnings };
  };
  return new SyncInterval({
    everyMs: seconds * 1000,
    run: async (stopping, stop) => {
      const problems = syncProblems(io);
      let report: SyncReport | undefined;
      try {
        report = await runSync(request(), { ...problems.hooks, stopRequested: () => (stopping() ? 'SIGTERM' : null), stop });
        return report;
      } finally {
        problems.flush(report === undefined ? undefined : news(report));
      }
    },
    onSynced: (report) => io.log.info(syncSummary(report)),
    onProblem: (error) => io.log.error(`sync failed, next in ${seconds} s: ${(error as Error).message ?? String(error)}`),
  });
}

/**
 * "site.sqlite-wal, vidfeeds.config.json changed", "start", "retry, site.sqlite changed" or
 * "sitemap dates" (the pass that writes the sitemap dates earlier builds owed).
 */
export function describeChanges(changes: readonly string[]): string {
  const events = ['start', 'retry', 'lastmods'].filter((e) => changes.includes(e)).map((e) => (e === 'lastmods' ? 'sitemap dates' : e));
  const names = [...new Set(changes.filter((c) => c.includes(':')).map((c) => shortName(c.slice(c.indexOf(':') + 1))))];
  if (names.length === 0) return events.join(', ');
  const shown = names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ');
  return [...events, `${shown} changed`].join(', ');
}
