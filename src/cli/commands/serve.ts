import type { Command } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { createSiteContext } from '../../pipeline/render/site-context.js';
import { checkDatabaseFile, openForReading, openForUpdate } from '../../db/open-database.js';
import { FORMATS } from '../../formats/registry.js';
import { routesOf } from '../../hosting/routes.js';
import { listen, type AccessEntry } from '../../serve/http-server.js';
import { SiteServer } from '../../serve/site-server.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { runCommand, type CommandRun, type Ending } from '../command-runner.js';
import { requireOption } from '../check-command-line.js';
import { configOptions, databaseOf, exitCodesHelp, nonNegativeInteger, outOf, readSettings, type ConfigFlags } from './shared-options.js';
import { parseListenHost } from './hosting.js';

interface ServeFlags extends ConfigFlags {
  db?: string;
  out?: string;
  port: number;
  host: string;
  /** --no-access-log */
  accessLog?: boolean;
}

/**
 * `vidfeeds serve`: previews the built tree with the rules of the generated nginx configuration,
 * and answers from the database what files cannot (oEmbed parameters, `?recommendations=N`, the
 * recommendation POST). Runs until SIGINT or SIGTERM.
 */
export function registerServe(program: Command, io: Console, setExit: (code: number) => void): void {
  const command = program
    .command('serve')
    .description('serve the built tree like the generated nginx configuration, plus what only the database can answer');
  requireOption(command, '--db <file>', 'site database (SQLite)', 'db');
  exitCodesHelp(configOptions(
    command
      .option('--out <dir>', 'the built tree (default: out, or `out` in the configuration)')
      .option('--port <n>', 'port to listen on (0: any free port, named in the first line)', nonNegativeInteger('--port', 65535), 8080)
      .option('--host <address>', 'address to listen on (loopback by default; use 0.0.0.0 behind a firewall only)', parseListenHost, '127.0.0.1')
      .option('--no-access-log', 'do not log each request (as accessLog: false in the configuration)'),
  ), {
    0: 'stopped by SIGINT or SIGTERM',
    2: 'bad flags, configuration or database, no tree, or the address cannot be listened on',
  }).action((flags: ServeFlags) => runCommand({ name: 'serve', io, setExit }, (runner) => serveAction(flags, io, runner)));
}

/** `vidfeeds serve`, once its flags are parsed: serves until the first SIGINT or SIGTERM. */
async function serveAction(flags: ServeFlags, io: Console, runner: CommandRun): Promise<Ending> {
  io.log.withTimes();
  const { site: config, run } = readSettings(flags, io);
  const root = outOf(flags.out, run);
  const dbFile = databaseOf(flags.db, run);
  checkDatabaseFile(dbFile);
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    throw new UsageError(`--out ${root} is not a directory: build the tree first (\`vidfeeds build --db ${dbFile} --out ${root}\`)`);
  }
  const site = createSiteContext(config, FORMATS);
  const db = openForReading(dbFile);
  const core = new SiteServer({
    root,
    site,
    routes: routesOf(FORMATS),
    db,
    openForWriting: () => openForUpdate(dbFile),
    reopen: { file: dbFile, openForReading: () => openForReading(dbFile) },
  });
  // Off by the flag or the configuration; below the level, not even formatted.
  const logged = flags.accessLog !== false && run.accessLog && io.log.enabled('info');
  const running = await listenOrSayWhy(core, flags, io, logged).catch((error: unknown) => {
    core.close();
    db.close();
    throw error;
  });
  io.log.info(`serving ${root} at ${running.url}${site.paths.basePath}/ (base URL ${site.paths.base}/); Ctrl-C stops`, { url: `${running.url}${site.paths.basePath}/` });
  await runner.stopOnSignal().heard;
  await running.close();
  core.close();
  db.close();
  io.log.info('stopped');
  return { exitCode: EXIT.ok };
}

/** Listens on the flags' address; an address that cannot be listened on is a usage error that names it. */
async function listenOrSayWhy(core: SiteServer, flags: ServeFlags, io: Console, logged: boolean) {
  try {
    return await listen(core, {
      host: flags.host,
      port: flags.port,
      access: logged ? (entry) => io.log.info(accessLine(entry), { ...entry, ms: Number(entry.ms.toFixed(3)) }) : undefined,
      error: (message) => io.log.error(message),
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new UsageError(`port ${flags.port} on ${flags.host} is in use: choose another with --port`);
    if (code === 'EACCES') throw new UsageError(`no permission to listen on port ${flags.port}: choose one above 1023 with --port`);
    if (code === 'EADDRNOTAVAIL') throw new UsageError(`--host ${flags.host} is not an address of this machine`);
    throw error;
  }
}

/** `192.0.2.7 "GET /alice/rss/" 200 5120 1.8ms`: an access line as text. */
export function accessLine(entry: AccessEntry): string {
  return `${entry.client} "${entry.method} ${entry.path}" ${entry.status} ${entry.bytes} ${entry.ms.toFixed(1)}ms`;
}
