import type { Command } from 'commander';
import { resolve } from 'node:path';
import type { BuildReport } from '../../build/build-report.js';
import { acquireBuildLock } from '../../build/lock.js';
import { DEFAULT_CONFIG_FILE, loadConfig } from '../../config/config.js';
import { shortName, watchInputs } from '../../watch/file-watcher.js';
import { WatchSession } from '../../watch/watch-session.js';
import { EXIT } from '../errors.js';
import type { Console } from '../output.js';
import { buildRequest, summaryText } from './build.js';
import { configOptions, configOverrides, positiveInteger, type ConfigFlags } from './shared-options.js';

interface WatchFlags extends ConfigFlags {
  db: string;
  out: string;
  state?: string;
  debounce: number;
}

const DEFAULT_DEBOUNCE_MS = 300;

/**
 * `vidfeeds watch`: builds, then rebuilds (incrementally) whenever the database, the configuration
 * or a template changes, until Ctrl-C or SIGTERM. It holds the output directory's lock the whole
 * time; on a signal it lets a running build finish, releases the lock and exits 0.
 */
export function registerWatch(program: Command, io: Console, setExit: (code: number) => void): void {
  configOptions(
    program
      .command('watch')
      .description('build, then rebuild what changed whenever the database, the configuration or a template changes (Ctrl-C stops)')
      .requiredOption('--db <file>', 'site database (SQLite); its -wal file is watched too')
      .option('--out <dir>', 'output directory', 'out')
      .option('--state <file>', 'build state file (default: .vidfeeds/<out>.state.sqlite beside the output directory)')
      .option('--debounce <ms>', 'quiet time after a change before rebuilding', positiveInteger('--debounce', 60_000), DEFAULT_DEBOUNCE_MS),
  ).action(async (flags: WatchFlags) => {
    const request = buildRequest({ db: flags.db, out: flags.out, state: flags.state });
    const configFile = resolve(flags.config ?? DEFAULT_CONFIG_FILE);
    const load = () => loadConfig({ configFile: flags.config, overrides: configOverrides(flags) });
    load(); // A bad configuration stops here, before the lock is taken or a file touched (exit 2).

    const lock = acquireBuildLock(request.out, { command: 'vidfeeds watch' });
    try {
      const clock = () => new Date().toISOString().slice(11, 19);
      let watcher: ReturnType<typeof watchInputs> | undefined;
      const session = new WatchSession({
        db: request.db,
        out: request.out,
        stateFile: request.stateFile,
        loadConfig: load,
        lock,
        debounceMs: flags.debounce,
        onBuild: (report: BuildReport, changes) => {
          io.err(`vidfeeds: ${clock()} ${describeChanges(changes)}: ${summaryText(report)}`);
          watcher?.setTemplateDirs(session.templateDirs());
        },
        onProblem: (message) => io.err(`vidfeeds: ${clock()} ${message}`),
      });
      watcher = watchInputs(
        { db: request.db, config: configFile, templateDirs: session.templateDirs() },
        (kind, path) => session.changed(kind, path),
        (message) => io.err(`vidfeeds: ${message}`),
      );
      await watcher.ready();
      io.err(`vidfeeds: watching ${request.db} (and its -wal), ${configFile} and templates in ${session.templateDirs().join(', ')}; Ctrl-C stops`);
      session.start();
      const signal = await nextSignal();
      io.err(`vidfeeds: ${signal}: stopping${session.queue.busy ? ' after the running build' : ''}`);
      await session.stop();
      await watcher.close();
    } finally {
      lock.release();
    }
    io.err('vidfeeds: stopped');
    setExit(EXIT.ok);
  });
}

/** Resolves with the first SIGINT or SIGTERM; a second one gets the default (immediate exit). */
function nextSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolveSignal) => {
    const handler = (signal: NodeJS.Signals) => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
      resolveSignal(signal);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}

/** "site.sqlite-wal, vidfeeds.config.json changed" or "start". */
export function describeChanges(changes: readonly string[]): string {
  if (changes.length === 1 && changes[0] === 'start') return 'start';
  const names = [...new Set(changes.filter((c) => c !== 'start').map((c) => shortName(c.slice(c.indexOf(':') + 1))))];
  const shown = names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ');
  return `${shown} changed`;
}
