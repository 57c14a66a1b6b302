import { Logger } from './logger.js';

/** Where commands talk to people: stdout for results; stderr, through `log`, for warnings, summaries and errors. */
export interface Console {
  out(text: string): void;
  /** Lines on stderr at a level, as text or JSON (logger.ts). */
  readonly log: Logger;
  /** Whether stderr is a terminal (progress is shown only there, never in a log or a pipe). */
  readonly interactive: boolean;
}

export const processConsole: Console = {
  out: (text) => process.stdout.write(`${text}\n`),
  log: new Logger((line) => process.stderr.write(`${line}\n`)),
  interactive: Boolean(process.stderr.isTTY),
};
