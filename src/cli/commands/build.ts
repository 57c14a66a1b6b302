import type { Command } from 'commander';
import { resolve } from 'node:path';
import { BuildState, defaultStateFile } from '../../build/build-state.js';
import { runBuild, type BuildReport } from '../../build/build.js';
import { DirectoryWriter } from '../../build/output-writer.js';
import { parseShard, showShard, type ShardSpec } from '../../build/shard.js';
import { createSiteContext } from '../../build/site-context.js';
import { loadConfig } from '../../config/config.js';
import { openForReading } from '../../db/open-database.js';
import { SiteReader } from '../../db/site-reader.js';
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
  shard?: string;
}

/** The typed options of one build, from raw flags. Everything is checked before a file is touched. */
export interface BuildRequest {
  db: string;
  out: string;
  stateFile: string;
  only?: Set<string>;
  user?: string;
  shard?: ShardSpec;
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
      .option('--shard <K/N>', 'build only part K of N of the site (site-wide files in part 1); see docs/scale.md'),
  ).action((flags: BuildFlags) => {
    const config = loadConfig({ configFile: flags.config, overrides: configOverrides(flags) });
    const shard = flags.shard === undefined ? undefined : parseShardFlag(flags.shard);
    const request: BuildRequest = {
      db: resolve(flags.db),
      out: resolve(flags.out),
      stateFile: resolve(flags.state ?? shardStateFile(defaultStateFile(flags.out), shard)),
      only: flags.only === undefined ? undefined : parseFormatList(flags.only),
      user: flags.user,
      shard,
    };
    if (request.user !== undefined && request.user === '') throw new UsageError('--user needs a name');
    const site = createSiteContext(config, FORMATS);
    const db = openForReading(request.db);
    const reader = new SiteReader(db, config.recommendationsCount);
    const state = new BuildState(request.stateFile);
    try {
      checkStateShard(state, request);
    } catch (error) {
      state.close();
      db.close();
      throw error;
    }
    const writer = new DirectoryWriter(request.out);
    let warnings = 0;
    let report: BuildReport;
    try {
      report = runBuild(
        { reader, writer, state, site, formats: FORMATS, reporter: {
          progress: io.interactive ? (done) => process.stderr.write(`\r${done} documents…`) : undefined,
          warn: (message) => {
            if (++warnings <= MAX_WARNINGS) io.err(`${io.interactive ? '\r' : ''}vidfeeds: ${message}`);
          },
        } },
        { only: request.only, user: request.user, strict: config.strict, shard: request.shard },
      );
    } finally {
      writer.close();
      state.close();
      db.close();
    }
    if (io.interactive) process.stderr.write('\r\x1b[K');
    if (warnings > MAX_WARNINGS) io.err(`vidfeeds: … and ${warnings - MAX_WARNINGS} more warnings`);
    io.err(summary(report));
    setExit(report.failedCount > 0 ? EXIT.failed : EXIT.ok);
  });
}

export function summary(report: BuildReport): string {
  const parts = [
    `${report.written} written`,
    `${report.unchanged} unchanged`,
    `${report.removed} removed`,
    `${report.skippedCount} skipped`,
  ];
  if (report.failedCount > 0) parts.push(`${report.failedCount} failed`);
  return `vidfeeds: ${report.documents} documents in ${report.seconds.toFixed(2)}s: ${parts.join(', ')}`;
}

function parseShardFlag(text: string): ShardSpec {
  const shard = parseShard(text);
  if ('problem' in shard) throw new UsageError(`--shard: ${shard.problem}`);
  return shard;
}

/** Each shard keeps its own state, so shards may even share one output directory. */
function shardStateFile(file: string, shard: ShardSpec | undefined): string {
  return shard === undefined ? file : file.replace(/\.state\.sqlite$/, `.shard-${shard.index}-of-${shard.count}.state.sqlite`);
}

/**
 * A state knows which part of the site it covers: building another part with it would prune the
 * other part's files as gone. It is recorded on first use and checked after.
 */
function checkStateShard(state: BuildState, request: BuildRequest): void {
  const part = request.shard === undefined || request.shard.count === 1 ? 'all' : showShard(request.shard);
  // A state from before shards existed covers the whole site.
  const recorded = state.getMeta('shard') ?? (state.count() > 0 ? 'all' : null);
  if (recorded !== null && recorded !== part) {
    const was = recorded === 'all' ? 'the whole site' : `shard ${recorded}`;
    const now = part === 'all' ? 'the whole site' : `shard ${part}`;
    throw new UsageError(
      `build state ${request.stateFile} belongs to ${was}, this build is ${now}: give each shard its own --state ` +
        '(the default does), or start over with a new state file and output directory',
    );
  }
  state.setMeta('shard', part);
}
