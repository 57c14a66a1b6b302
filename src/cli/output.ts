/** Where commands talk to people: stdout for results, stderr for progress, warnings and summaries. */
export interface Console {
  out(text: string): void;
  err(text: string): void;
  /** Whether stderr is a terminal (progress is shown only there, never in a log or a pipe). */
  readonly interactive: boolean;
}

export const processConsole: Console = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  interactive: Boolean(process.stderr.isTTY),
};
