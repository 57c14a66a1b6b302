import { Command, CommanderError, Option } from 'commander';
import { VIDFEEDS_VERSION } from '../config/version.js';
import { checkCommandLine } from './check-command-line.js';
import { EXIT, exitCodeOf } from './errors.js';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './logger.js';
import { processConsole, type Console } from './output.js';

type Register = (program: Command, io: Console, setExit: (code: number) => void) => void;

/**
 * The commands, in the order help lists them, each loaded only when needed: a command's module
 * brings what it runs (the server, the watcher, the host configurations...), and loading all of
 * them would cost every invocation their memory and start-up time.
 */
const COMMANDS: Record<string, () => Promise<Register>> = {
  init: async () => (await import('./commands/init.js')).registerInit,
  demo: async () => (await import('./commands/demo.js')).registerDemo,
  sync: async () => (await import('./commands/sync.js')).registerSync,
  build: async () => (await import('./commands/build.js')).registerBuild,
  check: async () => (await import('./commands/check.js')).registerCheck,
  shards: async () => (await import('./commands/shards.js')).registerShards,
  formats: async () => (await import('./commands/formats.js')).registerFormats,
  'oembed-links': async () => (await import('./commands/oembed-links.js')).registerOembedLinks,
  head: async () => (await import('./commands/head.js')).registerHead,
  recommend: async () => (await import('./commands/recommend.js')).registerRecommend,
  recommendations: async () => (await import('./commands/moderate-recommendations.js')).registerRecommendations,
  hosting: async () => (await import('./commands/hosting.js')).registerHosting,
  serve: async () => (await import('./commands/serve.js')).registerServe,
  watch: async () => (await import('./commands/watch.js')).registerWatch,
  deploy: async () => (await import('./commands/deploy.js')).registerDeploy,
};

/**
 * The command line. Each command lives in its own file under commands/ and reports its exit code
 * through `setExit` (the long ones and those with a `--json` report through `runCommand`,
 * command-runner.ts, which also owns signals and the environment); this function alone turns
 * errors into exit codes (`exitCodeOf`, errors.ts):
 * 0 success, 1 a failed build (or a check that found problems), 2 bad usage or configuration,
 * 75 another build holds the lock, 130/143 a build stopped by SIGINT/SIGTERM.
 */
export async function main(argv: string[], io: Console = processConsole): Promise<number> {
  let exitCode: number = EXIT.ok;
  const setExit = (code: number) => {
    exitCode = code;
  };
  // The logging flags apply from the start, so that even a bad command line is reported in the
  // form asked for; check-command-line.ts reports a bad value of theirs with the rest.
  io.log.useFlags(loggingFlags(argv));
  const program = new Command()
    .name('vidfeeds')
    .description("Pre-render a video site's public data documents from its SQLite database into a static tree.")
    .version(VIDFEEDS_VERSION)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.out(text.replace(/\n$/, '')),
      // What commander itself still reports (an unknown command), in the words of our other errors.
      writeErr: (text) => io.log.error(`command line: ${text.replace(/^error: /, '').replace(/\n$/, '').replace(/\n/g, '; ')} (see vidfeeds --help)`),
    });
  // The command named first is the only one needed, and `--version` alone needs none; anything
  // else (help, a mistyped name, an option first) gets them all, so help lists them and
  // commander can suggest one.
  const named = argv[2];
  const wanted =
    named !== undefined && Object.hasOwn(COMMANDS, named) ? [named] : argv.length === 3 && (named === '--version' || named === '-V') ? [] : Object.keys(COMMANDS);
  for (const register of await Promise.all(wanted.map((name) => COMMANDS[name]!()))) register(program, io, setExit);
  addLoggingOptions(program);

  try {
    checkCommandLine(program, argv);
    await program.parseAsync(argv);
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are successes; everything else commander raises is a usage error.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const code = exitCodeOf(error);
    io.log.error((error as Error).message ?? String(error));
    if (code === EXIT.failed) io.log.debug((error as Error).stack ?? '');
    return code;
  }
}

/** `--log-level` and `--log-format` on every command that runs (not on groups such as `hosting`). */
function addLoggingOptions(command: Command): void {
  for (const sub of command.commands) addLoggingOptions(sub);
  if (command.parent === null || command.commands.length > 0) return;
  command
    .addOption(new Option('--log-level <level>', 'lowest level of the lines written to stderr (default: info, or logLevel in the configuration)').choices(LOG_LEVELS))
    .addOption(new Option('--log-format <format>', 'stderr lines as text or as JSON lines for a log collector (default: text, or logFormat in the configuration)').choices(LOG_FORMATS));
}

/** The logging flags' values, where they are valid (a bad one is reported by the command line's check). */
function loggingFlags(argv: readonly string[]): { level?: LogLevel; format?: LogFormat } {
  const valueOf = (flag: string): string | undefined => {
    let at = -1;
    argv.forEach((arg, i) => {
      if (arg === flag || arg.startsWith(`${flag}=`)) at = i;
    });
    if (at === -1) return undefined;
    return argv[at]!.includes('=') ? argv[at]!.slice(flag.length + 1) : argv[at + 1];
  };
  const level = valueOf('--log-level');
  const format = valueOf('--log-format');
  return {
    level: (LOG_LEVELS as readonly string[]).includes(level ?? '') ? (level as LogLevel) : undefined,
    format: (LOG_FORMATS as readonly string[]).includes(format ?? '') ? (format as LogFormat) : undefined,
  };
}
