import type { Command } from 'commander';
import { existsSync, linkSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEFAULT_CONFIG_FILE, starterConfigText } from '../../config/load-config.js';
import { describeIssue } from '../../db/decode.js';
import { openForWriting } from '../../db/open-database.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { configOverrides } from './shared-options.js';

interface InitFlags {
  db?: string;
  force?: boolean;
  writeConfig?: string | true;
  baseUrl?: string;
  siteName?: string;
}

export function registerInit(program: Command, io: Console, setExit: (code: number) => void): void {
  program
    .command('init')
    .description('create a site database or upgrade one to the current schema version; write a starter configuration')
    .option('--db <file>', 'site database (SQLite) to create or upgrade')
    .option('--force', "add vidfeeds's tables to a SQLite file that holds other tables and no vidfeeds schema")
    .option('--write-config [file]', `write a starter configuration with every setting (default: ${DEFAULT_CONFIG_FILE}); never replaces a file`)
    .option('--base-url <url>', 'baseUrl of the starter configuration')
    .option('--site-name <name>', 'siteName of the starter configuration')
    .action((flags: InitFlags) => {
      if (flags.db === undefined && flags.writeConfig === undefined) {
        throw new UsageError('init needs --db FILE, --write-config [FILE], or both');
      }
      if (flags.writeConfig === undefined && (flags.baseUrl !== undefined || flags.siteName !== undefined)) {
        throw new UsageError('--base-url and --site-name fill the starter configuration: add --write-config');
      }
      // Everything is checked before the database or the configuration is touched.
      let config: { file: string; text: string } | undefined;
      if (flags.writeConfig !== undefined) {
        const file = resolve(flags.writeConfig === true ? DEFAULT_CONFIG_FILE : flags.writeConfig);
        if (existsSync(file)) throw new UsageError(`${file} exists: init never replaces a configuration; remove it or name another file`);
        config = { file, text: starterConfigText(file, configOverrides({ baseUrl: flags.baseUrl, siteName: flags.siteName })) };
      }
      if (flags.db !== undefined) {
        const file = resolve(flags.db);
        const existed = existsSync(file);
        const { db, from, to, wrongTypes } = openForWriting(file, { adopt: flags.force ?? false });
        db.close();
        if (from === 0 && existed) io.err(`vidfeeds: added vidfeeds's tables (schema version ${to}) to ${file}`);
        else if (from === 0) io.err(`vidfeeds: created ${file} at schema version ${to}`);
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
      }
      if (config !== undefined) {
        writeNew(config.file, config.text);
        const next = flags.baseUrl === undefined ? ': set baseUrl to the URL the tree is served under' : '';
        io.err(`vidfeeds: wrote ${config.file}${next}`);
      }
      setExit(EXIT.ok);
    });
}

/** Writes a whole file under a name that must not exist yet: beside, then linked into place (which fails if it appeared meanwhile). */
function writeNew(file: string, text: string): void {
  const temp = `${file}.tmp-${process.pid}`;
  writeFileSync(temp, text);
  try {
    linkSync(temp, file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw code === 'EEXIST' ? new UsageError(`${file} exists: init never replaces a configuration`) : error;
  } finally {
    rmSync(temp, { force: true });
  }
}
