import type { Command } from 'commander';
import { resolve } from 'node:path';
import { describeIssue } from '../../db/decode.js';
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
      const { db, from, to, wrongTypes } = openForWriting(file);
      db.close();
      if (from === 0) io.err(`vidfeeds: created ${file} at schema version ${to}`);
      else if (from === to) io.err(`vidfeeds: ${file} is already at schema version ${to}`);
      else io.err(`vidfeeds: upgraded ${file} from schema version ${from} to ${to}`);
      // The schema now refuses these values; the rows already holding them are kept, and named.
      for (const issue of wrongTypes) io.err(`vidfeeds: kept as stored: ${describeIssue(issue)}`);
      if (wrongTypes.length > 0) {
        io.err(
          `vidfeeds: ${wrongTypes.length} stored ${wrongTypes.length === 1 ? 'value is' : 'values are'} of the wrong type; ` +
            'new writes of such values are refused, and builds treat these by the rule of their column (docs/database.md)',
        );
      }
      setExit(EXIT.ok);
    });
}
