import type { Command } from 'commander';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { defaultStateFile } from '../../build/build-state.js';
import type { BuildReport } from '../../build/build.js';
import { buildSite } from '../../build/site-build.js';
import { parseShard, shardStateFile, type ShardSpec } from '../../build/shard.js';
import { createSiteContext } from '../../build/site-context.js';
import { DEFAULT_BASE_URL, DEFAULT_CONFIG_FILE, loadConfig, previewUrlSettings } from '../../config/config.js';
import { isDemoDatabase } from '../../db/demo-data.js';
import { checkUserExists } from '../../db/user-lookup.js';
import { FORMATS } from '../../formats/registry.js';
import { EXIT, UsageError } from '../errors.js';
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

const MAX_WARNINGS = 50;

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
      .option('--shard <K/N>', 'build only part K of N of the site (site-wide files in part 1); see docs/scale.md'),
  ).action((flags: BuildFlags) => {
    const config = loadConfig({ configFile: flags.config, overrides: configOverrides(flags) });
    const request = buildRequest(flags);
    const site = createSiteContext(config, FORMATS);
    if (request.user !== undefined) checkUserExists(request.db, request.user);
    const preview = previewUrlSettings(config);
    if (preview.length > 0 && isDemoDatabase(request.db) === false) {
      const them = preview.length > 1 ? 'them' : 'it';
      const flag = preview.includes('baseUrl') ? ' (or pass --base-url)' : '';
      io.err(`vidfeeds: warning: ${preview.join(', ')} still at the default ${DEFAULT_BASE_URL}: the documents will link there; set ${them} in ${DEFAULT_CONFIG_FILE}${flag}`);
    }
    let warnings = 0;
    const report = buildSite({
      ...request,
      config,
      site,
      reporter: {
        progress: io.interactive ? (done) => process.stderr.write(`\r${done} documents…`) : undefined,
        warn: (message) => {
          if (++warnings <= MAX_WARNINGS) io.err(`${io.interactive ? '\r' : ''}vidfeeds: ${message}`);
        },
      },
    });
    if (io.interactive) process.stderr.write('\r\x1b[K');
    if (warnings > MAX_WARNINGS) io.err(`vidfeeds: … and ${warnings - MAX_WARNINGS} more warnings`);
    io.err(summary(report));
    setExit(report.failedCount > 0 ? EXIT.failed : EXIT.ok);
  });
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
