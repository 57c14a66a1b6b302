import type { Command } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { defaultStateFile } from '../../pipeline/build-state.js';
import { SavedState } from '../../pipeline/saved-state.js';
import { defaultLockFile, LockHeldError, runningHolder } from '../../lock/lock.js';
import { parseShard, shardStateFile, type ShardSpec } from '../../shard/shard.js';
import type { CheckProblem, TreeCheckResult } from '../../check/tree-check.js';
import { checkDatabaseFile, openForReading } from '../../db/open-database.js';
import { SiteReader } from '../../db/site-reader.js';
import { readLimits } from '../../formats/read-limits.js';
import { FORMATS } from '../../formats/registry.js';
import { SitePaths } from '../../paths/site-paths.js';
import { EXIT, UsageError } from '../errors.js';
import { reportHead } from '../json-report.js';
import { runCommand } from '../command-runner.js';
import type { Console } from '../output.js';
import { configOptions, databaseOf, exitCodesHelp, outOf, readSettings, stateOf } from './shared-options.js';
import { hasUnshowable, quoted } from '../../config/shown-text.js';

/**
 * `vidfeeds check --out DIR [--db FILE]`: is the tree a server serves the tree the last build made
 * (src/check/tree-check.ts)? Exit 0 when it is; 1 with one line per problem on stdout, each naming
 * the file; 2 for usage (no such directory, no build state, a bad database); 75 while a build of
 * the directory runs.
 */

interface CheckFlags {
  out?: string;
  db?: string;
  state?: string;
  shard?: string;
  config?: string;
  json?: boolean;
  quiet?: boolean;
}

export function registerCheck(program: Command, io: Console, setExit: (code: number) => void): void {
  const command = program
    .command('check')
    .description('verify a built tree against its last build: recorded bytes, nothing missing or stray, documents valid; with --db, the published users and videos')
    .option('--out <dir>', 'output directory to check (default: out, or `out` in the configuration)')
    .option('--db <file>', "site database: the tree's users and videos must be exactly its published ones (default: `db` in the configuration, if set)")
    .option('--state <file>', 'build state file (default: `state` in the configuration, else .vidfeeds/<out>.state.sqlite beside the output directory)')
    .option('--shard <K/N>', 'the tree holds part K of N (its state, its users and videos)')
    .option('--json', 'print one JSON report on stdout (docs/report.md)')
    .option('--quiet', 'print only problems');
  exitCodesHelp(configOptions(command, { baseUrl: false, siteName: false }), {
    0: 'the tree is as built',
    1: 'problems (one line each on stdout, naming the file; the last line names the command that repairs them)',
    2: 'bad flags or configuration, no such directory, no build state, a bad database',
    75: 'a build of the directory is running',
  }).action((flags: CheckFlags) => runCommand({ name: 'check', json: flags.json, io, setExit }, async () => {
      const started = process.hrtime.bigint();
      if (flags.quiet) io.log.useFlags({ level: 'warn' });
      const { site: config, run } = readSettings(flags, io);
      const out = outOf(flags.out, run);
      if (!statSync(out, { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`--out ${out} is not a directory`);
      const shard = flags.shard === undefined ? undefined : checkedShard(flags.shard);
      const stateFile = resolve(stateOf(flags.state, run) ?? shardStateFile(defaultStateFile(out), shard));
      if (!existsSync(stateFile)) {
        throw new UsageError(`no build state at ${stateFile}: check compares the tree with the record of the build that made it; build first, or name the state with --state`);
      }
      const dbFile = flags.db !== undefined || run.db !== null ? databaseOf(flags.db, run) : undefined;
      if (dbFile !== undefined) checkDatabaseFile(dbFile);
      refuseWhileBuilding(out);
      const state = openState(stateFile);
      const db = dbFile === undefined ? undefined : openForReading(dbFile);
      let result: TreeCheckResult;
      try {
        // Loaded here, not with the command line: libxml2's WebAssembly and the schemas would
        // cost every other command (a build among them) megabytes of memory it never uses.
        const { checkTree } = await import('../../check/tree-check.js');
        result = checkTree({
          out,
          state,
          paths: new SitePaths(config.baseUrl, config.pages, FORMATS),
          formats: FORMATS,
          shard,
          reader: db === undefined ? undefined : new SiteReader(db, readLimits(config.recommendationsCount)),
        });
      } finally {
        state.close();
        db?.close();
      }
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      for (const schema of result.missingSchemas) io.log.warn(`schema ${schema} not found: those documents were only parsed`);
      const exitCode = result.problems.length === 0 ? EXIT.ok : EXIT.failed;
      if (flags.json) io.out(checkJson(out, stateFile, result, seconds, exitCode));
      else for (const problem of result.problems) io.out(problemLine(problem));
      if (exitCode === EXIT.ok) io.log.info(checkSummary(result, seconds), { ...result.counts, problems: 0 });
      else {
        io.log.error(checkSummary(result, seconds), { ...result.counts, problems: result.problems.length });
        // The one command that makes the tree what the database renders (a full build reads every file back).
        const repair = ['vidfeeds build --full', flags.config && `--config ${flags.config}`, flags.db === undefined && run.db !== null ? '' : `--db ${dbFile ?? 'SITE.sqlite'}`, `--out ${out}`, flags.state && `--state ${stateFile}`, flags.shard && `--shard ${flags.shard}`];
        io.log.error(`to repair: ${repair.filter(Boolean).join(' ')} (rewrites what differs or is missing, removes stray files; then check again)`, { repair: repair.filter(Boolean).join(' ') });
      }
      return { exitCode };
    }));
}

/** One line per problem, whatever a stray file's name holds: a name with characters a terminal acts on is quoted. */
export function problemLine({ file, problem }: CheckProblem): string {
  if (file === '') return problem;
  return `${hasUnshowable(file) ? quoted(file) : file}: ${problem}`;
}

function checkSummary(result: TreeCheckResult, seconds: number): string {
  const { counts } = result;
  const what = `${counts.recorded} recorded files, ${counts.files} files where vidfeeds writes, ${counts.validated} checked against a schema${counts.users === undefined ? '' : `, ${counts.users} users and ${counts.videos} videos compared with the database`}`;
  const n = result.problems.length;
  return `${n === 0 ? 'the tree is as built' : `${n} ${n === 1 ? 'problem' : 'problems'}`}: ${what}, in ${seconds.toFixed(2)}s`;
}

function checkJson(out: string, stateFile: string, result: TreeCheckResult, seconds: number, exitCode: number): string {
  return JSON.stringify({
    ...reportHead('check', exitCode),
    out,
    state: stateFile,
    seconds,
    counts: { ...result.counts, problems: result.problems.length },
    problems: result.problems,
    missingSchemas: result.missingSchemas,
  });
}

/** A check while a build writes would report its half-done work: exit 75, try again later. */
function refuseWhileBuilding(out: string): void {
  const file = defaultLockFile(out);
  const holder = runningHolder(file);
  if (holder !== null) throw new LockHeldError(file, out, holder);
}

function openState(file: string): SavedState {
  try {
    return new SavedState(file);
  } catch (error) {
    throw new UsageError(`cannot read the build state ${file}: ${(error as Error).message}`, error);
  }
}

function checkedShard(text: string): ShardSpec {
  const shard = parseShard(text);
  if ('problem' in shard) throw new UsageError(`--shard: ${shard.problem}`);
  return shard;
}
