import type { Command } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { defaultStateFile, SavedState } from '../../pipeline/build-state.js';
import { defaultLockFile, LockHeldError, runningHolder } from '../../pipeline/lock.js';
import { parseShard, shardStateFile, type ShardSpec } from '../../pipeline/plan/shard.js';
import type { CheckProblem, TreeCheckResult } from '../../check/tree-check.js';
import { loadConfig } from '../../config/config.js';
import { openForReading } from '../../db/open-database.js';
import { SiteReader } from '../../db/site-reader.js';
import { FORMATS } from '../../formats/registry.js';
import { SitePaths } from '../../paths/site-paths.js';
import { EXIT, UsageError } from '../errors.js';
import { REPORT_VERSION, withJsonErrors } from '../json-report.js';
import type { Console } from '../output.js';

/**
 * `vidfeeds check --out DIR [--db FILE]`: is the tree a server serves the tree the last build made
 * (src/check/tree-check.ts)? Exit 0 when it is; 1 with one line per problem on stdout, each naming
 * the file; 2 for usage (no such directory, no build state, a bad database); 75 while a build of
 * the directory runs.
 */

interface CheckFlags {
  out: string;
  db?: string;
  state?: string;
  shard?: string;
  config?: string;
  json?: boolean;
  quiet?: boolean;
}

export function registerCheck(program: Command, io: Console, setExit: (code: number) => void): void {
  program
    .command('check')
    .description('verify a built tree against its last build: recorded bytes, nothing missing or stray, documents valid; with --db, the published users and videos')
    .option('--out <dir>', 'output directory to check', 'out')
    .option('--db <file>', "site database: the tree's users and videos must be exactly its published ones")
    .option('--state <file>', 'build state file (default: .vidfeeds/<out>.state.sqlite beside the output directory)')
    .option('--shard <K/N>', 'the tree holds part K of N (its state, its users and videos)')
    .option('--config <file>', 'configuration file (default: vidfeeds.config.json if present)')
    .option('--json', 'print one JSON report on stdout (docs/report.md)')
    .option('--quiet', 'print only problems')
    .addHelpText('after', '\nExit codes: 0 the tree is as built, 1 problems (one line each on stdout, naming the file), 2 usage,\n75 a build of the directory is running.')
    .action((flags: CheckFlags) => withJsonErrors('check', flags.json, io.out, async () => {
      const started = process.hrtime.bigint();
      const out = resolve(flags.out);
      if (!statSync(out, { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`--out ${flags.out} is not a directory`);
      const shard = flags.shard === undefined ? undefined : checkedShard(flags.shard);
      const stateFile = resolve(flags.state ?? shardStateFile(defaultStateFile(out), shard));
      if (!existsSync(stateFile)) {
        throw new UsageError(`no build state at ${stateFile}: check compares the tree with the record of the build that made it; build first, or name the state with --state`);
      }
      const config = loadConfig({ configFile: flags.config, overrides: {} });
      refuseWhileBuilding(out);
      const state = openState(stateFile);
      const db = flags.db === undefined ? undefined : openForReading(resolve(flags.db));
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
          reader: db === undefined ? undefined : new SiteReader(db, config.recommendationsCount),
        });
      } finally {
        state.close();
        db?.close();
      }
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      for (const schema of result.missingSchemas) io.err(`vidfeeds: schema ${schema} not found: those documents were only parsed`);
      const exitCode = result.problems.length === 0 ? EXIT.ok : EXIT.failed;
      if (flags.json) io.out(checkJson(out, stateFile, result, seconds, exitCode));
      else for (const problem of result.problems) io.out(problemLine(problem));
      if (!flags.quiet || exitCode !== EXIT.ok) io.err(`vidfeeds: ${checkSummary(result, seconds)}`);
      setExit(exitCode);
    }));
}

/** One line per problem, whatever a stray file's name holds: a name with control characters is quoted. */
export function problemLine({ file, problem }: CheckProblem): string {
  if (file === '') return problem;
  return `${/[\u0000-\u001f\u007f]/.test(file) ? JSON.stringify(file) : file}: ${problem}`;
}

function checkSummary(result: TreeCheckResult, seconds: number): string {
  const { counts } = result;
  const what = `${counts.recorded} recorded files, ${counts.files} files where vidfeeds writes, ${counts.validated} checked against a schema${counts.users === undefined ? '' : `, ${counts.users} users and ${counts.videos} videos compared with the database`}`;
  const n = result.problems.length;
  return `${n === 0 ? 'the tree is as built' : `${n} ${n === 1 ? 'problem' : 'problems'}`}: ${what}, in ${seconds.toFixed(2)}s`;
}

function checkJson(out: string, stateFile: string, result: TreeCheckResult, seconds: number, exitCode: number): string {
  return JSON.stringify({
    report: REPORT_VERSION,
    command: 'check',
    ok: exitCode === EXIT.ok,
    exitCode,
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
    throw new UsageError(`cannot read the build state ${file}: ${(error as Error).message}`);
  }
}

function checkedShard(text: string): ShardSpec {
  const shard = parseShard(text);
  if ('problem' in shard) throw new UsageError(`--shard: ${shard.problem}`);
  return shard;
}
