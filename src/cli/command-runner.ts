import { InvalidArgumentError } from 'commander';
import { constants } from 'node:os';
import { readEnvironment, type CommandEnvironment } from './environment.js';
import { exitCodeOf } from './errors.js';
import { reportHead } from './json-report.js';
import type { Console } from './output.js';

/**
 * The one runner of the commands: every command's action runs inside `runCommand`, which owns
 * what they would otherwise each write again. It reads the environment (environment.ts), listens
 * for SIGINT and SIGTERM on the command's behalf, prints the `--json` report of an action that
 * ends with an error, and sets the exit code from the action's ending. `main` (main.ts) still
 * turns an error into its exit code and its message on stderr.
 */

export type StopSignal = 'SIGINT' | 'SIGTERM';

/** How an action ended: its exit code, and the report `--json` prints on stdout. */
export interface Ending {
  exitCode: number;
  /**
   * Printed on stdout with --json, after everything the action said on stderr: one line, given
   * whole or in pieces (a report too large to hold as one string is written as it is made).
   */
  report?: () => string | Iterable<string>;
}

/** What the runner gives an action. */
export interface CommandRun {
  readonly env: CommandEnvironment;
  /** Listens for SIGINT and SIGTERM from now until `release` or the end of the action. */
  stopOnSignal(stopping?: (signal: StopSignal) => void): StopListener;
  /**
   * From now on, an error that ends the action is reported with --json as `report` says (a report
   * that names what the command did up to then); before, as the error alone.
   */
  reportErrorsAs(report: (error: unknown, exitCode: number) => string): void;
}

/**
 * The first SIGINT or SIGTERM asks the command to stop: the listener notes it (`requested`),
 * calls the command's `stopping` (which says so on stderr), aborts `aborted` and resolves `heard`.
 * It listens no more after the first one: a second signal gets Node's default and ends the
 * process at once.
 */
export interface StopListener {
  requested(): StopSignal | null;
  readonly aborted: AbortSignal;
  readonly heard: Promise<StopSignal>;
  release(): void;
}

export interface CommandContext {
  /** The command's name in its JSON report (`build`, `shards check`). */
  name: string;
  json?: boolean;
  io: Console;
  setExit: (code: number) => void;
}

/** Runs a command's action: signals, the environment, JSON reports and the exit code (see above). */
export async function runCommand(command: CommandContext, action: (run: CommandRun) => Promise<Ending> | Ending): Promise<void> {
  const listeners: StopListener[] = [];
  let errorReport = (error: unknown, exitCode: number) => JSON.stringify({ ...reportHead(command.name, exitCode), error: messageOf(error) });
  const run: CommandRun = {
    env: readEnvironment(),
    stopOnSignal: (stopping) => {
      const listener = listenForStop(stopping);
      listeners.push(listener);
      return listener;
    },
    reportErrorsAs: (report) => {
      errorReport = report;
    },
  };
  let ending: Ending;
  try {
    ending = await action(run);
  } catch (error) {
    if (command.json) command.io.out(errorReport(error, exitCodeOf(error)));
    throw error;
  } finally {
    for (const listener of listeners) listener.release();
  }
  if (command.json && ending.report !== undefined) printReport(command.io, ending.report());
  command.setExit(ending.exitCode);
}

function printReport(io: Console, report: string | Iterable<string>): void {
  if (typeof report === 'string') return io.out(report);
  if (io.write === undefined) return io.out([...report].join(''));
  for (const piece of report) io.write(piece);
  io.write('\n');
}

function listenForStop(stopping?: (signal: StopSignal) => void): StopListener {
  let raised: StopSignal | null = null;
  const abort = new AbortController();
  let hear: (signal: StopSignal) => void = () => {};
  const heard = new Promise<StopSignal>((resolve) => {
    hear = resolve;
  });
  const release = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  const onSignal = (signal: StopSignal) => {
    raised = signal;
    release();
    stopping?.(signal);
    abort.abort();
    hear(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return { requested: () => raised, aborted: abort.signal, heard, release };
}

/** 128 + the signal's number, as a shell reports a process that a signal ended: 130, 143. */
export function exitCodeOfSignal(signal: StopSignal): number {
  return 128 + constants.signals[signal];
}

/** `--wait <seconds>` of the commands that wait for a lock: 0 or more seconds, fractions allowed. */
export function waitSeconds(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value)) throw new InvalidArgumentError('--wait needs a number of seconds (0 or more)');
  return Number(value);
}

function messageOf(error: unknown): string {
  return (error as Error).message ?? String(error);
}
