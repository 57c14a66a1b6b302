import { EXIT, VidfeedsError } from './vidfeeds-error.js';

/** One thing wrong with the configuration, and where: a place in a file, a flag, or the defaults. */
export interface ConfigProblem {
  /** `/path/vidfeeds.config.json:3:14`, `--base-url`, or `defaults`. */
  where: string;
  /** The setting, dotted (`player.width`, `robots.disallow[0]`); empty for the file as a whole. */
  setting: string;
  problem: string;
}

/** Settings that are missing, mistyped or out of range: every one found, each with where it is. Exit code 2. */
export class ConfigError extends VidfeedsError {
  constructor(
    readonly problems: readonly ConfigProblem[],
    cause?: unknown,
  ) {
    const one = problems.length === 1 ? problems[0]! : null;
    const shape =
      one !== null
        ? { where: `configuration ${one.where}`, what: `${one.setting ? `${one.setting} ` : ''}${one.problem}` }
        : { where: 'configuration', what: `${problems.length} problems:\n${problems.map((p) => `  ${line(p)}`).join('\n')}` };
    super(EXIT.usage, { ...shape, cause });
  }
}

function line(p: ConfigProblem): string {
  return `${p.where}: ${p.setting ? `${p.setting} ` : ''}${p.problem}`;
}
