import type { Command } from 'commander';
import { existsSync, linkSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { DEFAULT_CONFIG_FILE, starterConfigText } from '../../config/load-config.js';
import { describeIssue } from '../../db/decode.js';
import { openForWriting } from '../../db/open-database.js';
import { EXAMPLE_FROM_ENV, mappingExample } from '../../sync/mapping-example.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { configOverrides, exitCodesHelp } from './shared-options.js';

interface InitFlags {
  db?: string;
  force?: boolean;
  writeConfig?: string | true;
  baseUrl?: string;
  siteName?: string;
  syncExample?: boolean;
}

export function registerInit(program: Command, io: Console, setExit: (code: number) => void): void {
  const command = program.command('init');
  exitCodesHelp(command, { 0: 'created, upgraded or already current; the configuration written', 2: 'bad flags, a file that is not a vidfeeds database, or a configuration that exists: nothing was changed' });
  command
    .description('create a site database or upgrade one to the current schema version; write a starter configuration')
    .option('--db <file>', 'site database (SQLite) to create or upgrade')
    .option('--force', "add vidfeeds's tables to a SQLite file that holds other tables and no vidfeeds schema")
    .option('--write-config [file]', `write a starter configuration with every setting (default: ${DEFAULT_CONFIG_FILE}); never replaces a file`)
    .option('--base-url <url>', 'baseUrl of the starter configuration')
    .option('--site-name <name>', 'siteName of the starter configuration')
    .option('--sync-example', `fill the starter's sync section with an example mapping of every table, commented, reading the source's URL from ${EXAMPLE_FROM_ENV} (docs/adopting.md)`)
    .action((flags: InitFlags) => {
      if (flags.db === undefined && flags.writeConfig === undefined) {
        throw new UsageError('init needs --db FILE, --write-config [FILE], or both');
      }
      if (flags.writeConfig === undefined && (flags.baseUrl !== undefined || flags.siteName !== undefined || flags.syncExample !== undefined)) {
        throw new UsageError('--base-url, --site-name and --sync-example fill the starter configuration: add --write-config');
      }
      // Everything is checked before the database or the configuration is touched.
      let config: { file: string; text: string } | undefined;
      if (flags.writeConfig !== undefined) {
        const file = resolve(flags.writeConfig === true ? DEFAULT_CONFIG_FILE : flags.writeConfig);
        if (existsSync(file)) throw new UsageError(`${file} exists: init never replaces a configuration; remove it or name another file`);
        // The database named beside it goes into the file, relative to it, so later commands need no --db.
        const db = flags.db === undefined ? undefined : relative(dirname(file), resolve(flags.db)) || resolve(flags.db);
        const sync = flags.syncExample
          ? { 'sync.fromEnv': { flag: '--sync-example', value: EXAMPLE_FROM_ENV }, 'sync.tables': { flag: '--sync-example', value: mappingExample() } }
          : {};
        config = { file, text: starterConfigText(file, { ...configOverrides({ baseUrl: flags.baseUrl, siteName: flags.siteName }), db: { flag: '--db', value: db }, ...sync }) };
      }
      if (flags.db !== undefined) {
        const file = resolve(flags.db);
        const existed = existsSync(file);
        const { db, from, to, wrongTypes } = openForWriting(file, { adopt: flags.force ?? false });
        db.close();
        if (from === 0 && existed) io.log.info(`added vidfeeds's tables (schema version ${to}) to ${file}`);
        else if (from === 0) io.log.info(`created ${file} at schema version ${to}`);
        else if (from === to) io.log.info(`${file} is already at schema version ${to}`);
        else io.log.info(`upgraded ${file} from schema version ${from} to ${to}`);
        // The schema now refuses these values; the rows already holding them are kept, and named.
        for (const issue of wrongTypes) io.log.warn(`kept as stored: ${describeIssue(issue)}`);
        if (wrongTypes.length > 0) {
          io.log.warn(
            `${wrongTypes.length} stored ${wrongTypes.length === 1 ? 'value is' : 'values are'} of the wrong type; ` +
              'new writes of such values are refused, and builds treat these by the rule of their column (docs/database.md)',
          );
        }
      }
      if (config !== undefined) {
        writeNew(config.file, config.text);
        io.log.info(`wrote ${config.file}`);
      }
      io.log.info(nextSteps(flags, config?.file));
      setExit(EXIT.ok);
    });
}

/** What to do after init: the settings still to make, then the first build and what serves it. */
function nextSteps(flags: InitFlags, configFile: string | undefined): string {
  const steps: string[] = [];
  const configFlag = configFile === undefined || configFile === resolve(DEFAULT_CONFIG_FILE) ? '' : ` --config ${configFile}`;
  if (configFile === undefined) steps.push('write a configuration: vidfeeds init --write-config --base-url https://YOUR-SITE');
  else if (flags.baseUrl === undefined) steps.push(`set baseUrl in ${configFile} to the URL the tree is served under (or pass --base-url)`);
  const db = configFile !== undefined && flags.db !== undefined ? '' : ` --db ${flags.db ?? 'SITE.sqlite'}`;
  if (flags.syncExample) {
    steps.push(`map the site's tables: edit sync.tables in ${configFile} (docs/adopting.md), and check it with ${EXAMPLE_FROM_ENV}=mysql://USER@HOST/DATABASE vidfeeds sync${db}${configFlag} --dry-run`);
    steps.push(`copy the rows: vidfeeds sync${db}${configFlag}`);
  }
  steps.push(`build the tree: vidfeeds build${db}${configFlag} --out out`);
  steps.push(`look at it: vidfeeds serve${db}${configFlag} --out out, then open http://127.0.0.1:8080/sitemap.xml`);
  steps.push('serve it in production: vidfeeds hosting nginx --root out (docs/hosting.md)');
  return `next:\n${steps.map((step, i) => `  ${i + 1}. ${step}`).join('\n')}`;
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
