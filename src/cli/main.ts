import { Command, CommanderError } from 'commander';
import { VIDFEEDS_VERSION } from '../config/version.js';
import { EXIT, exitCodeOf } from './errors.js';
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
  build: async () => (await import('./commands/build.js')).registerBuild,
  check: async () => (await import('./commands/check.js')).registerCheck,
  shards: async () => (await import('./commands/shards.js')).registerShards,
  formats: async () => (await import('./commands/formats.js')).registerFormats,
  recommend: async () => (await import('./commands/recommend.js')).registerRecommend,
  recommendations: async () => (await import('./commands/moderate-recommendations.js')).registerRecommendations,
  hosting: async () => (await import('./commands/hosting.js')).registerHosting,
  serve: async () => (await import('./commands/serve.js')).registerServe,
  watch: async () => (await import('./commands/watch.js')).registerWatch,
};

/**
 * The command line. Each command lives in its own file under commands/ and reports its exit code
 * through `setExit`; this function alone turns errors into exit codes (`exitCodeOf`, errors.ts):
 * 0 success, 1 a failed build (or a check that found problems), 2 bad usage or configuration,
 * 75 another build holds the lock, 130/143 a build stopped by SIGINT/SIGTERM.
 */
export async function main(argv: string[], io: Console = processConsole): Promise<number> {
  let exitCode: number = EXIT.ok;
  const setExit = (code: number) => {
    exitCode = code;
  };
  const program = new Command()
    .name('vidfeeds')
    .description("Pre-render a video site's public data documents from its SQLite database into a static tree.")
    .version(VIDFEEDS_VERSION)
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.out(text.replace(/\n$/, '')),
      writeErr: (text) => io.err(text.replace(/\n$/, '')),
    });
  // The command named first is the only one needed; anything else (help, a mistyped name, an
  // option first) gets them all, so help lists them and commander can suggest one.
  const named = argv[2];
  const wanted = named !== undefined && Object.hasOwn(COMMANDS, named) ? [named] : Object.keys(COMMANDS);
  for (const register of await Promise.all(wanted.map((name) => COMMANDS[name]!()))) register(program, io, setExit);

  try {
    await program.parseAsync(argv);
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are successes; everything else commander raises is a usage error.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const code = exitCodeOf(error);
    io.err(`vidfeeds: ${(error as Error).message ?? String(error)}`);
    if (code === EXIT.failed && process.env.VIDFEEDS_DEBUG) io.err((error as Error).stack ?? '');
    return code;
  }
}
