import { InvalidArgumentError, type Command } from 'commander';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { defaultStateFile } from '../../pipeline/build-state.js';
import { describeSkip, type BuildReport } from '../../pipeline/build-report.js';
import { parseShard, shardStateFile, type ShardSpec } from '../../pipeline/plan/shard.js';
import { createSiteContext } from '../../pipeline/render/site-context.js';
import { loadConfig } from '../../config/config.js';
import { checkUserExists } from '../../db/user-lookup.js';
import { FORMATS } from '../../formats/registry.js';
import { buildSiteYielding } from '../../pipeline/site-build.js';
import { EXIT, exitCodeOf, UsageError } from '../errors.js';
import { BuildJson, ReportedError, withJsonErrors } from '../json-report.js';
import { previewUrlWarning } from '../preview-warning.js';
import { ProgressLine } from '../progress.js';
import type { Console } from '../output.js';
import { configOptions, configOverrides, type ConfigFlags } from './shared-options.js';

interface BuildFlags extends ConfigFlags {
  db: string;
  out: string;
  state?: string;
  only?: string;
  user?: string;
  full?: boolean;
  shard?: string;
  wait?: number;
  json?: boolean;
  quiet?: boolean;
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

/** The typed request of a build from its flags; refuses a state file inside the served tree. */
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
  configOptions(
    program
      .command('build')
      .description('render every public document of the site database into the output directory')
      .requiredOption('--db <file>', 'site database (SQLite)')
      .option('--out <dir>', 'output directory', 'out')
      .option('--state <file>', 'build state file (default: .vidfeeds/<out>.state.sqlite beside the output directory)')
      .option('--only <formats>', 'comma-separated format names to build (see `vidfeeds formats`)')
      .option('--user <name>', "build only this user's documents and their videos'")
      .option('--full', 'render everything, even when an incremental build is possible')
      .option('--shard <K/N>', 'build only part K of N of the site (site-wide files in part 1); see docs/scale.md')
      .option('--wait <seconds>', 'when another build holds the lock, wait up to this long for it (default 0: exit 75 at once)', nonNegativeSeconds)
      .option('--json', 'print one JSON report on stdout (docs/report.md): mode, counts, skipped rows, failures, URLs written and removed')
      .option('--quiet', 'print only problems (skipped rows, failures, errors): no summary, no progress'),
  ).action(async (flags: BuildFlags) => {
    let json: BuildJson | undefined;
    // With --json, an error before the build (flags, configuration) prints the error alone; one
    // during it (interrupted, locked, a bad database) prints what the build did up to then.
    await withJsonErrors('build', flags.json, io.out, async () => {
      const config = loadConfig({ configFile: flags.config, overrides: configOverrides(flags) });
      const request = buildRequest(flags);
      // Templates are loaded here, so a broken one stops the build before any file is touched.
      const site = createSiteContext(config, FORMATS);
      if (request.user !== undefined) checkUserExists(request.db, request.user);
      const warning = previewUrlWarning(config, request.db);
      if (warning !== null) io.err(warning);
      json = flags.json ? new BuildJson(site.paths, request.out) : undefined;
      const progress = io.interactive && !flags.quiet ? new ProgressLine((text) => process.stderr.write(text)) : undefined;
      const clear = progress ? '\r\x1b[K' : '';
      const stop = stopOnSignal((signal) => io.err(`${clear}vidfeeds: ${signal}: stopping the build after the current document…`));
      let report: BuildReport;
      try {
        report = await buildSiteYielding({
          ...request,
          config,
          site,
          waitSeconds: flags.wait ?? 0,
          command: 'vidfeeds build',
          writeThread: writeThreadSetting(process.env.VIDFEEDS_WRITE_THREAD),
          stopRequested: stop.requested,
          reporter: {
            progress: progress === undefined ? undefined : (done) => progress.update(done),
            started: (plan) => progress?.expect(plan.expected),
            // Every one, however many: the operator must be able to find each row it left out.
            warn: (message) => io.err(`${clear}vidfeeds: ${message}`),
            skipped: (skipped) => json?.skipped.push({ ...skipped, reason: describeSkip(skipped) }),
            failed: (failure) => json?.failed.push(failure),
            wrote: json === undefined ? undefined : (path) => json!.wrote([path]),
            removed: json === undefined ? undefined : (path) => json!.removed([path]),
          },
        });
      } catch (error) {
        stop.release();
        progress?.clear();
        if (json) {
          io.out(json.text({ error, exitCode: exitCodeOf(error) }));
          throw new ReportedError(error);
        }
        throw error;
      }
      stop.release();
      progress?.clear();
      const exitCode = report.failedCount > 0 ? EXIT.failed : EXIT.ok;
      if (!flags.quiet || exitCode !== EXIT.ok) io.err(summary(report));
      if (json) io.out(json.text({ report, exitCode }));
      setExit(exitCode);
    });
  });
}

/**
 * The first SIGINT or SIGTERM asks the build to stop between two owners (the build lets the event
 * loop turn every few milliseconds, so the handler runs): it records what it wrote, removes its
 * staging folder, releases the lock, and the command exits 130 or 143. A second signal is not
 * caught: it ends the process at once.
 */
function stopOnSignal(stopping: (signal: 'SIGINT' | 'SIGTERM') => void): { requested: () => 'SIGINT' | 'SIGTERM' | null; release(): void } {
  let raised: 'SIGINT' | 'SIGTERM' | null = null;
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const release = () => {
    for (const s of signals) process.off(s, onSignal);
  };
  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => {
    raised = signal;
    release();
    stopping(signal);
  };
  for (const s of signals) process.on(s, onSignal);
  return { requested: () => raised, release };
}

/** VIDFEEDS_WRITE_THREAD=0 writes on the build's thread, =1 on a thread of its own; unset: by the machine's cores (measurements, docs/performance.md). */
function writeThreadSetting(value: string | undefined): boolean | undefined {
  return value === undefined || value === '' ? undefined : value !== '0';
}

function nonNegativeSeconds(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value)) throw new InvalidArgumentError('--wait needs a number of seconds (0 or more)');
  return Number(value);
}

export function summary(report: BuildReport): string {
  return `vidfeeds: ${summaryText(report)}`;
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
  const { users, videos, siteFiles } = report.owners;
  if (report.changes === 0) return 'incremental build (no changes since the last build)';
  const owners = `${users} users, ${videos} videos${siteFiles ? ', site files' : ''}`;
  const unknown = report.owners.unknownTables.length === 0 ? '' : `; unknown tables ${report.owners.unknownTables.join(', ')} in the log: all rendered`;
  return `incremental build (${report.changes} changes since the last build → ${owners}${unknown})`;
}

function parseShardFlag(text: string): ShardSpec {
  const shard = parseShard(text);
  if ('problem' in shard) throw new UsageError(`--shard: ${shard.problem}`);
  return shard;
}
