import type { Command } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { createSiteContext } from '../../pipeline/render/site-context.js';
import { loadConfig } from '../../config/config.js';
import { openForReading, openForUpdate } from '../../db/open-database.js';
import { FORMATS } from '../../formats/registry.js';
import { routesOf } from '../../hosting/routes.js';
import { listen } from '../../serve/http-server.js';
import { SiteServer } from '../../serve/site-server.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { configOptions, configOverrides, positiveInteger, type ConfigFlags } from './shared-options.js';
import { parseListenHost } from './hosting.js';

interface ServeFlags extends ConfigFlags {
  db: string;
  out: string;
  port: number;
  host: string;
  quiet?: boolean;
}

/**
 * `vidfeeds serve`: previews the built tree with the rules of the generated nginx configuration,
 * and answers from the database what files cannot (oEmbed parameters, `?recommendations=N`, the
 * recommendation POST). Runs until SIGINT or SIGTERM.
 */
export function registerServe(program: Command, io: Console, setExit: (code: number) => void): void {
  configOptions(
    program
      .command('serve')
      .description('serve the built tree like the generated nginx configuration, plus what only the database can answer')
      .requiredOption('--db <file>', 'site database (SQLite)')
      .option('--out <dir>', 'the built tree', 'out')
      .option('--port <n>', 'port to listen on', positiveInteger('--port', 65535), 8080)
      .option('--host <address>', 'address to listen on (loopback by default; use 0.0.0.0 behind a firewall only)', parseListenHost, '127.0.0.1')
      .option('--quiet', 'do not log each request to stderr'),
  ).action(async (flags: ServeFlags) => {
    const config = loadConfig({ configFile: flags.config, overrides: configOverrides(flags) });
    const root = resolve(flags.out);
    if (!existsSync(root) || !statSync(root).isDirectory()) {
      throw new UsageError(`--out ${root} is not a directory: build the tree first (\`vidfeeds build --db ${flags.db} --out ${flags.out}\`)`);
    }
    const dbFile = resolve(flags.db);
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
    let running;
    try {
      running = await listen(core, { host: flags.host, port: flags.port, log: flags.quiet ? undefined : (line) => io.err(line) });
    } catch (error) {
      core.close();
      db.close();
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE') throw new UsageError(`port ${flags.port} on ${flags.host} is in use: choose another with --port`);
      if (code === 'EACCES') throw new UsageError(`no permission to listen on port ${flags.port}: choose one above 1023 with --port`);
      if (code === 'EADDRNOTAVAIL') throw new UsageError(`--host ${flags.host} is not an address of this machine`);
      throw error;
    }
    io.err(`vidfeeds: serving ${root} at ${running.url}${site.paths.basePath}/ (base URL ${site.paths.base}/); Ctrl-C stops`);
    await new Promise<void>((done) => {
      const stop = () => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        done();
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    await running.close();
    core.close();
    db.close();
    io.err('vidfeeds: stopped');
    setExit(EXIT.ok);
  });
}
