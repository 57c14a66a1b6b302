import { Command, CommanderError } from 'commander';
import { VIDFEEDS_VERSION } from '../config/version.js';
import { registerBuild } from './commands/build.js';
import { registerCheck } from './commands/check.js';
import { registerDemo } from './commands/demo.js';
import { registerFormats } from './commands/formats.js';
import { registerHosting } from './commands/hosting.js';
import { registerServe } from './commands/serve.js';
import { registerShards } from './commands/shards.js';
import { registerInit } from './commands/init.js';
import { registerRecommend } from './commands/recommend.js';
import { registerRecommendations } from './commands/moderate-recommendations.js';
import { registerWatch } from './commands/watch.js';
import { EXIT, exitCodeOf } from './errors.js';
import { boundHeapGrowth } from './heap.js';
import { processConsole, type Console } from './output.js';

/**
 * The command line. Each command lives in its own file under commands/ and reports its exit code
 * through `setExit`; this function alone turns errors into exit codes (`exitCodeOf`, errors.ts):
 * 0 success, 1 a failed build (or a check that found problems), 2 bad usage or configuration,
 * 75 another build holds the lock, 130/143 a build stopped by SIGINT/SIGTERM.
 */
export async function main(argv: string[], io: Console = processConsole): Promise<number> {
  boundHeapGrowth();
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
  registerInit(program, io, setExit);
  registerDemo(program, io, setExit);
  registerBuild(program, io, setExit);
  registerCheck(program, io, setExit);
  registerShards(program, io, setExit);
  registerFormats(program, io, setExit);
  registerRecommend(program, io, setExit);
  registerRecommendations(program, io, setExit);
  registerHosting(program, io, setExit);
  registerServe(program, io, setExit);
  registerWatch(program, io, setExit);

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
