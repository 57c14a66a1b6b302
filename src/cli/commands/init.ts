import type { Command } from 'commander';
import { resolve } from 'node:path';
import { openForWriting } from '../../db/open-database.js';
import { EXIT } from '../errors.js';
import type { Console } from '../output.js';

export function registerInit(program: Command, io: Console, setExit: (code: number) => void): void {
  program
    .command('init')
    .description('create a site database, or upgrade one to the current schema version')
    .requiredOption('--db <file>', 'site database (SQLite) to create or upgrade')
    .action((flags: { db: string }) => {
      const file = resolve(flags.db);
      const { db, from, to } = openForWriting(file);
      db.close();
      if (from === 0) io.err(`vidfeeds: created ${file} at schema version ${to}`);
      else if (from === to) io.err(`vidfeeds: ${file} is already at schema version ${to}`);
      else io.err(`vidfeeds: upgraded ${file} from schema version ${from} to ${to}`);
      setExit(EXIT.ok);
    });
}
