import { Logger } from './logger.js';

/** Where commands talk to people: stdout for results; stderr, through `log`, for warnings, summaries and errors. */
export interface Console {
  out(text: string): void;
  /** Text on stdout as it is, no line end added: a report written in pieces (absent: `out` takes it whole). */
  write?(text: string): void;
  /** Lines on stderr at a level, as text or JSON (logger.ts). */
  readonly log: Logger;
  /** Whether stderr is a terminal (progress is shown only there, never in a log or a pipe). */
  readonly interactive: boolean;
}

/**
 * A stream whose reader went away (`vidfeeds check | head`) says EPIPE, once, as an error event:
 * what is left to say is dropped, quietly, and the command still ends with its own exit code.
 */
function quietWhenClosed(stream: NodeJS.WriteStream, end = '\n'): (text: string) => void {
  let closed = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    closed = true;
  });
  return (text) => {
    if (!closed) stream.write(`${text}${end}`);
  };
}

export const processConsole: Console = {
  out: quietWhenClosed(process.stdout),
  write: quietWhenClosed(process.stdout, ''),
  log: new Logger(quietWhenClosed(process.stderr)),
  interactive: Boolean(process.stderr.isTTY),
};
