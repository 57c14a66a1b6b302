import { InvalidArgumentError, type Command } from 'commander';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEMO_DEFAULTS, DEMO_SHAPES, generateDemo, type DemoShape } from '../../db/demo-data.js';
import { openForWriting } from '../../db/open-database.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { exitCodesHelp, positiveInteger } from './shared-options.js';

interface DemoFlags {
  db: string;
  users: number;
  seed: number;
  shape: DemoShape;
  ifMissing?: boolean;
  force?: boolean;
}

export function registerDemo(program: Command, io: Console, setExit: (code: number) => void): void {
  const command = program.command('demo');
  exitCodesHelp(command, { 0: 'written (or, with --if-missing, already there)', 2: 'bad flags, or the file exists without --force or --if-missing' });
  command
    .description('write a deterministic demo site database (same --users and --seed, same database)')
    .requiredOption('--db <file>', 'database file to create')
    .option('--users <n>', 'number of users in all, the nine fixed characters first', positiveInteger('--users', 10_000_000), DEMO_DEFAULTS.users)
    .option('--seed <n>', 'random seed', positiveInteger('--seed', 2 ** 31), DEMO_DEFAULTS.seed)
    .option('--shape <shape>', 'demo (about five videos per user) or feed-heavy (every user 20+ public videos, full groups and recommendations)', demoShape, DEMO_DEFAULTS.shape)
    .option('--if-missing', 'do nothing when the file exists already')
    .option('--force', 'replace the file when it exists')
    .action((flags: DemoFlags) => {
      const file = resolve(flags.db);
      if (existsSync(file)) {
        if (flags.ifMissing) {
          io.log.info(`${file} exists; left as it is`);
          io.log.info(lookAtIt(flags.db));
          setExit(EXIT.ok);
          return;
        }
        if (!flags.force) throw new UsageError(`${file} exists: pass --force to replace it, or --if-missing to keep it`);
        for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
      }
      const started = Date.now();
      // Write to a temporary name and rename, so an interrupted run leaves no half-made database.
      const temp = `${file}.tmp-${process.pid}`;
      const { db } = openForWriting(temp);
      let counts;
      try {
        db.pragma('journal_mode = OFF');
        db.pragma('synchronous = OFF');
        db.pragma('cache_size = -262144');
        counts = generateDemo(db, { users: flags.users, seed: flags.seed, shape: flags.shape });
        // A live site's database runs in WAL mode (docs/database.md); closing it leaves one file.
        db.pragma('journal_mode = WAL');
      } catch (error) {
        db.close();
        rmSync(temp, { force: true });
        throw error;
      }
      db.close();
      rmSync(`${temp}-wal`, { force: true });
      rmSync(`${temp}-shm`, { force: true });
      renameSync(temp, file);
      io.log.info(`wrote ${file}: ${counts.users} users, ${counts.videos} videos in ${((Date.now() - started) / 1000).toFixed(1)}s`);
      io.log.info(lookAtIt(flags.db));
      setExit(EXIT.ok);
    });
}

/** How to see the demo site: build it, serve it, and a few URLs to open. */
function lookAtIt(db: string): string {
  const quoted = /^[\w./-]+$/.test(db) ? db : JSON.stringify(db);
  return [
    'to look at it:',
    `  vidfeeds build --db ${quoted} --out out`,
    `  vidfeeds serve --db ${quoted} --out out`,
    '  then open http://127.0.0.1:8080/alice/rss/, http://127.0.0.1:8080/alice/foaf/ or http://127.0.0.1:8080/sitemap.xml',
    '  (vidfeeds formats lists every URL; the files are under out/)',
  ].join('\n');
}

function demoShape(value: string): DemoShape {
  if (!(DEMO_SHAPES as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${DEMO_SHAPES.join(', ')}`);
  return value as DemoShape;
}
