import type { Command } from 'commander';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { readBuildRecords, type FoundRecord } from '../../pipeline/record/build-record.js';
import { checkShards } from '../../pipeline/record/shard-check.js';
import { EXIT, UsageError } from '../errors.js';
import { reportHead } from '../json-report.js';
import { runCommand } from '../command-runner.js';
import type { Console } from '../output.js';
import { exitCodesHelp } from './shared-options.js';

/**
 * `vidfeeds shards check <dir>...`: before the parts of a sharded build are merged, checks from
 * the build records their builds left (src/pipeline/record/build-record.ts) that they are every part of one
 * split, built whole from one database snapshot with one vidfeeds, configuration and templates
 * (src/pipeline/record/shard-check.ts, docs/scale.md). Exit 0 when they agree, 1 when they do not (each
 * problem on stdout), 2 when a directory or a record cannot be read.
 */

export function registerShards(program: Command, io: Console, setExit: (code: number) => void): void {
  const shards = program.command('shards').description('work with the parts of a sharded build (`vidfeeds build --shard K/N`, docs/scale.md)');

  const check = shards.command('check');
  exitCodesHelp(check, { 0: 'the parts agree', 1: 'they do not (each problem on stdout)', 2: 'a directory or a record cannot be read' });
  check
    .description('check that the parts in these output directories can be merged: all N parts, one database snapshot, one configuration')
    .argument('<dir...>', 'output directories of the parts (one holding every part, or one per part)')
    .option('--json', 'print one JSON report on stdout (docs/report.md)')
    .option('--quiet', 'print only problems')
    .addHelpText(
      'after',
      '\nEach build leaves .vidfeeds-build.json (a part: .vidfeeds-build.shard-K-of-N.json) in its output directory;\n' +
        'this compares them.',
    )
    .action((dirs: string[], flags: { json?: boolean; quiet?: boolean }) => runCommand({ name: 'shards check', json: flags.json, io, setExit }, () => {
      const started = process.hrtime.bigint();
      const records: FoundRecord[] = [];
      const withoutRecord: string[] = [];
      const given = new Map<string, string>();
      for (const dir of dirs) {
        const full = resolve(dir);
        // The same directory twice (`out out/`) is one directory, not two copies of its parts.
        if (given.has(full)) continue;
        given.set(full, dir);
        if (!statSync(full, { throwIfNoEntry: false })?.isDirectory()) throw new UsageError(`${dir} is not a directory`);
        const found = readBuildRecords(full);
        if (found.length === 0) withoutRecord.push(full);
        records.push(...found);
      }
      const result = checkShards(records, withoutRecord, (full) => given.get(full) ?? full);
      const exitCode = result.problems.length === 0 ? EXIT.ok : EXIT.failed;
      if (flags.json) {
        io.out(
          JSON.stringify({
            ...reportHead('shards check', exitCode),
            seconds: Number(process.hrtime.bigint() - started) / 1e9,
            summary: result.summary,
            counts: { directories: given.size, records: records.length, problems: result.problems.length },
            problems: result.problems,
            parts: records.map(({ dir, file, record }) => ({ dir: given.get(dir) ?? dir, file, shard: record.shard, database: record.database, mode: record.mode, complete: record.complete, failed: record.failed, finishedAt: record.finishedAt })),
          }),
        );
      } else {
        for (const problem of result.problems) io.out(problem);
      }
      if (exitCode === EXIT.ok) {
        if (!flags.quiet) io.log.info(result.summary);
      } else io.log.error(result.summary);
      return { exitCode };
    }));
}
