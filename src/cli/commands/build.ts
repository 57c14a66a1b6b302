import type { Command } from 'commander';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { defaultStateFile } from '../../pipeline/build-state.js';
import { describeSkip, type BuildReport, type BuildReporter } from '../../pipeline/build-report.js';
import { parseShard, shardStateFile, type ShardSpec } from '../../shard/shard.js';
import { createSiteContext } from '../../pipeline/render/site-context.js';
import { checkDatabaseFile } from '../../db/open-database.js';
import { checkUserExists, publishedUserCount } from '../../db/user-lookup.js';
import { FORMATS } from '../../formats/registry.js';
import { buildSiteYielding } from '../../pipeline/site-build.js';
import { EXIT, UsageError } from '../errors.js';
import { BuildJson } from '../json-report.js';
import { runCommand, waitSeconds, type Ending } from '../command-runner.js';
import type { Delivery } from '../../deploy/notify.js';
import { previewUrlWarning } from '../preview-warning.js';
import { ProgressLine } from '../progress.js';
import type { Console } from '../output.js';
import { requireOption } from '../check-command-line.js';
import { configOptions, databaseOf, exitCodesHelp, outOf, readSettings, removalGuardOf, stateOf, strictOption, type ConfigFlags } from './shared-options.js';
import { announceBuild, buildNotifySettings, type AnnounceFlags } from '../announce.js';
import { routesOf } from '../../hosting/routes.js';

interface BuildFlags extends ConfigFlags, AnnounceFlags {
  db?: string;
  out?: string;
  state?: string;
  only?: string;
  user?: string;
  full?: boolean;
  shard?: string;
  wait?: number;
  json?: boolean;
  quiet?: boolean;
  dryRun?: boolean;
  allowRemovals?: boolean;
}

/** The typed options of one build, from raw flags. Everything is checked before a file is touched. */
export interface BuildRequest {
  db: string;
  out: string;
  stateFile: string;
  only?: Set<string>;
  user?: string;
  full: boolean;
  shard?: ShardSpec;
}

/**
 * The typed request of a build from its flags, paths already resolved (the flag, else the
 * configuration); refuses a state file inside the served tree.
 */
export function buildRequest(flags: { db: string; out: string; state?: string; only?: string; user?: string; full?: boolean; shard?: string }): BuildRequest {
  const shard = flags.shard === undefined ? undefined : parseShardFlag(flags.shard);
  const request: BuildRequest = {
    db: resolve(flags.db),
    out: resolve(flags.out),
    // Each shard keeps its own state, so shards may even share one output directory.
    stateFile: resolve(flags.state ?? shardStateFile(defaultStateFile(flags.out), shard)),
    only: flags.only === undefined ? undefined : parseFormatList(flags.only),
    user: flags.user,
    full: flags.full ?? false,
    shard,
  };
  if (request.user !== undefined && request.user === '') throw new UsageError('--user needs a name');
  if (request.full && (request.only !== undefined || request.user !== undefined)) {
    throw new UsageError('--full renders everything: it cannot be combined with --only or --user');
  }
  const inside = relative(request.out, request.stateFile);
  if (inside === '' || !(inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside))) {
    throw new UsageError(`--state ${request.stateFile} is inside the output directory ${request.out}, which is served: put it elsewhere`);
  }
  return request;
}

export function parseFormatList(list: string): Set<string> {
  const names = list
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  if (names.length === 0) throw new UsageError('--only needs at least one format name');
  const known = new Set(FORMATS.map((f) => f.name));
  const unknown = names.filter((n) => !known.has(n));
  if (unknown.length > 0) {
    throw new UsageError(`--only: unknown format ${unknown.join(', ')}; known formats: ${[...known].join(', ')}`);
  }
  return new Set(names);
}

export function registerBuild(program: Command, io: Console, setExit: (code: number) => void): void {
  const command = program.command('build').description('render every public document of the site database into the output directory');
  requireOption(command, '--db <file>', 'site database (SQLite)', 'db');
  exitCodesHelp(strictOption(configOptions(
    command
      .option('--out <dir>', 'output directory (default: out, or `out` in the configuration)')
      .option('--state <file>', 'build state file (default: `state` in the configuration, else .vidfeeds/<out>.state.sqlite beside the output directory)')
      .option('--only <formats>', 'comma-separated format names to build (see `vidfeeds formats`)')
      .option('--user <name>', "build only this user's documents and their videos'")
      .option('--full', 'render everything and repair the tree: read back every file and rewrite what differs or is missing, remove stray files where vidfeeds writes')
      .option('--dry-run', 'read and render everything, write, remove and record nothing; report what the build would write and remove (URLs with --json)')
      .option('--allow-removals', 'let the build remove more than maxRemovalShare of the published documents (an emptied table stops the build otherwise)')
      .option('--shard <K/N>', 'build only part K of N of the site (site-wide files in part 1); see docs/scale.md')
      .option('--wait <seconds>', 'when another build holds the lock, wait up to this long for it (default 0: exit 75 at once)', waitSeconds)
      .option('--json', 'print one JSON report on stdout (docs/report.md): mode, counts, skipped rows, failures, URLs written and removed')
      .option('--quiet', 'print only problems (skipped rows, failures, errors): no summary, no progress (as --log-level warn)')
      .option('--on-change <command>', 'after the build, run COMMAND (through sh) with every changed or removed URL on its standard input, one per line (a CDN purge)')
      .option('--no-notify', 'do not notify the WebSub hubs and IndexNow of the configuration after this build'),
  )), {
    0: 'built',
    1: 'documents failed (the others were written), --strict met a row that cannot be published, or the removal guard stopped the build (nothing removed)',
    2: 'bad flags, configuration, template or database: nothing was touched',
    75: 'another build holds the lock (try again later, or --wait SECONDS)',
    130: 'stopped by SIGINT (143: SIGTERM); what was written is recorded, the next build goes on',
  }).action((flags: BuildFlags) => buildCommand(flags, io, setExit));
}

/** `vidfeeds build`, once its flags are parsed. */
async function buildCommand(flags: BuildFlags, io: Console, setExit: (code: number) => void): Promise<void> {
  await runCommand({ name: 'build', json: flags.json, io, setExit }, async (runner) => {
    if (flags.quiet) io.log.useFlags({ level: 'warn' });
    const { site: config, run } = readSettings(flags, io);
    const request = buildRequest({ ...flags, db: databaseOf(flags.db, run), out: outOf(flags.out, run), state: stateOf(flags.state, run) });
    // Templates are loaded here, so a broken one stops the build before any file is touched.
    const site = createSiteContext(config, FORMATS, undefined, runner.env.xmlEngine);
    // With --json, an error before this point (flags, configuration) is reported alone; one
    // after it (a bad database, interrupted, locked) with what the build did up to then.
    const json = flags.json ? new BuildJson(site.paths, request.out, flags.dryRun === true) : undefined;
    if (json !== undefined) runner.reportErrorsAs((error, exitCode) => json.text({ error, exitCode }));
    // Before the state's folder is made: a missing database leaves nothing behind.
    checkDatabaseFile(request.db);
    if (request.user !== undefined) checkUserExists(request.db, request.user);
    const warning = previewUrlWarning(config, request.db);
    if (warning !== null) io.log.warn(warning);
    // A dry run publishes nothing, so nobody hears of it.
    const notify = flags.dryRun ? null : buildNotifySettings(config, site.paths, flags);
    const events = buildEvents(io, json, notify !== null, flags.wait);
    const stop = runner.stopOnSignal((signal) => {
      events.progress?.clear();
      io.log.warn(`${signal}: stopping the build after the current document…`);
    });
    let report: BuildReport;
    try {
      report = await buildSiteYielding({
        ...request,
        config,
        site,
        waitSeconds: flags.wait ?? 0,
        command: 'vidfeeds build',
        dryRun: flags.dryRun === true,
        removalGuard: removalGuardOf(flags, run),
        writeThread: runner.env.writeThread,
        stopRequested: stop.requested,
        reporter: events.reporter,
      });
    } finally {
      stop.release();
      events.progress?.clear();
    }
    // What was written is live once the build is done: hubs, IndexNow and the hook hear of it now.
    const deliveries = notify === null ? [] : await announceBuild(notify, events.files, site.paths, routesOf(FORMATS), io);
    return buildEnding(report, deliveries, request.db, flags, io, json);
  });
}

/**
 * Where a build's events go: the progress line on a terminal, warnings on stderr, every skipped
 * row, failure and file into the --json report, and the files written and removed kept for
 * those who hear of them (`announce`).
 */
function buildEvents(io: Console, json: BuildJson | undefined, announce: boolean, wait: number | undefined) {
  const files = { written: [] as string[], removed: [] as string[] };
  const progress = io.interactive && io.log.enabled('info') && !io.log.json ? new ProgressLine((text) => process.stderr.write(text)) : undefined;
  const reporter: BuildReporter = {
    progress: progress === undefined ? undefined : (done) => progress.update(done),
    waiting: (what) => io.log.info(`waiting up to ${wait} s for the lock: ${what}`),
    started: (plan) => progress?.expect(plan.expected),
    // Every one, however many: the operator must be able to find each row it left out.
    warn: (message) => {
      progress?.clear();
      io.log.warn(message);
    },
    skipped: (skipped) => json?.skipped.push({ ...skipped, reason: describeSkip(skipped) }),
    failed: (failure) => json?.failed.push(failure),
    wrote: json === undefined && !announce ? undefined : (path) => {
      json?.wrote([path]);
      if (announce) files.written.push(path);
    },
    removed: json === undefined && !announce ? undefined : (path) => {
      json?.removed([path]);
      if (announce) files.removed.push(path);
    },
  };
  return { files, progress, reporter };
}

/** A finished build's exit code, its summary on stderr, and its --json report. */
function buildEnding(report: BuildReport, deliveries: readonly Delivery[], db: string, flags: BuildFlags, io: Console, json: BuildJson | undefined): Ending {
  const exitCode = report.failedCount > 0 || deliveries.some((d) => !d.ok) ? EXIT.failed : EXIT.ok;
  const text = flags.dryRun ? `dry run, nothing written or removed: ${summaryText(report).replace(/(\d+) written, (\d+) unchanged, (\d+) removed/, '$1 to write, $2 unchanged, $3 to remove')}` : summaryText(report);
  const fields = { ...summaryFields(report), ...(flags.dryRun ? { dryRun: true } : {}) };
  if (exitCode === EXIT.ok) io.log.info(text, fields);
  else io.log.error(text, fields);
  const users = report.mode === 'partial' || flags.dryRun ? undefined : publishedUserCount(db);
  if (users !== undefined && users.published === 0) io.log.warn(noUsersPublished(db, users.rows));
  return { exitCode, report: json === undefined ? undefined : () => json.text({ report, exitCode, usersPublished: users?.published }) };
}

/** Why a site can publish nobody, for the warning of a build that published no user. */
export function noUsersPublished(db: string, rows: number): string {
  return rows === 0
    ? `0 users published: ${db} holds no users. If the site's data is in another database (or in other tables of this one), fill vidfeeds's tables from it with \`vidfeeds sync\` (docs/adopting.md)`
    : `0 users published: none of the ${rows} rows of users is active with a valid username and created_at (docs/database.md)`;
}

/** The summary's figures, as fields of a JSON log line. */
export function summaryFields(report: BuildReport): Record<string, unknown> {
  return {
    mode: report.mode,
    documents: report.documents,
    seconds: Number(report.seconds.toFixed(3)),
    written: report.written,
    unchanged: report.unchanged,
    removed: report.removed,
    skipped: report.skippedCount,
    failed: report.failedCount,
  };
}

/** What kind of build, why, and what it did, in one line. */
export function summaryText(report: BuildReport): string {
  const parts = [
    `${report.written} written`,
    `${report.unchanged} unchanged`,
    `${report.removed} removed`,
    `${report.skippedCount} skipped`,
  ];
  if (report.failedCount > 0) parts.push(`${report.failedCount} failed`);
  if (report.issueCount > 0) parts.push(`${report.issueCount} bad ${report.issueCount === 1 ? 'value' : 'values'}`);
  return `${describeMode(report)}: ${report.documents} documents in ${report.seconds.toFixed(2)}s: ${parts.join(', ')}`;
}

/** "incremental build (…)" / "full build (…)": what kind of build it was and why. */
export function describeMode(report: BuildReport): string {
  if (report.mode !== 'incremental' || report.owners === undefined) return `${report.mode} build (${report.reason})`;
  const { users, videos, siteFiles, lastmodsDeferred } = report.owners;
  const sitemap = siteFiles ? ', site files' : lastmodsDeferred === true ? ', sitemap dates owed' : '';
  if (report.changes === 0) return siteFiles ? 'incremental build (no changes since the last build → site files)' : 'incremental build (no changes since the last build)';
  const owners = `${users} users, ${videos} videos${sitemap}`;
  const unknown = report.owners.unknownTables.length === 0 ? '' : `; unknown tables ${report.owners.unknownTables.join(', ')} in the log: all rendered`;
  return `incremental build (${report.changes} changes since the last build → ${owners}${unknown})`;
}

function parseShardFlag(text: string): ShardSpec {
  const shard = parseShard(text);
  if ('problem' in shard) throw new UsageError(`--shard: ${shard.problem}`);
  return shard;
}
