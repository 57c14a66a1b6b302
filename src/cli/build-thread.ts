import { Worker } from 'node:worker_threads';
import type { BuildReport, Failure } from '../pipeline/build-report.js';
import type { BuildMode } from '../pipeline/plan/incremental.js';
import { InterruptFlag } from '../pipeline/interrupt.js';
import type { ShardSpec } from '../pipeline/plan/shard.js';
import type { SiteConfig } from '../config/config.js';
import { ExitError } from './errors.js';

/**
 * Runs `vidfeeds build` on a worker thread, so this thread stays free to hear SIGINT and SIGTERM
 * while the (synchronous) build runs: the first one raises a shared flag the build reads between
 * users and videos (src/pipeline/interrupt.ts); the build stops, records what it wrote, removes its
 * staging folder and releases the lock, and the command exits 130 or 143. A second signal is not
 * caught: it ends the process at once.
 */

export interface BuildThreadInput {
  request: {
    db: string;
    out: string;
    stateFile: string;
    only?: string[];
    user?: string;
    full: boolean;
    shard?: ShardSpec;
    waitSeconds: number;
    command: string;
  };
  config: SiteConfig;
  interrupt: SharedArrayBuffer;
  /** Send progress counts. */
  progress: boolean;
  /** Send the paths written and removed (for --json). */
  paths: boolean;
}

/** A skipped row as the thread sends it: the reporter's `Skipped` with its reason in words. */
export interface SkippedRow {
  kind: 'user' | 'video';
  key: string;
  reason: string;
  [detail: string]: unknown;
}

export type BuildThreadMessage =
  | { type: 'progress'; done: number }
  | { type: 'warn'; message: string }
  | { type: 'started'; mode: BuildMode; reason: string; expected?: number }
  | { type: 'skipped'; skipped: SkippedRow }
  | { type: 'failed'; failure: Failure }
  | { type: 'wrote'; paths: string[] }
  | { type: 'removed'; paths: string[] }
  | { type: 'done'; report: BuildReport }
  | { type: 'error'; message: string; exitCode: number; stack?: string };

export interface BuildThreadEvents {
  progress?(done: number): void;
  warn(message: string): void;
  started?(plan: { mode: BuildMode; reason: string; expected?: number }): void;
  skipped?(row: SkippedRow): void;
  failed?(failure: Failure): void;
  wrote?(paths: readonly string[]): void;
  removed?(paths: readonly string[]): void;
  /** The first signal arrived: the build is stopping. */
  stopping?(signal: 'SIGINT' | 'SIGTERM'): void;
}

const WORKER = new URL('./build-worker.js', import.meta.url);
const BUILD_YOUNG_GENERATION_MB = 16;

function startWorker(): Worker {
  // A bounded young generation, as the render threads have: the build keeps one user's documents
  // alive at a time, and V8's default let a feed-heavy build's heap grow by tens of megabytes
  // for no speed (docs/performance.md, "Memory").
  return new Worker(WORKER, { resourceLimits: { maxYoungGenerationSizeMb: BUILD_YOUNG_GENERATION_MB } });
}

/** The thread prestartBuildThread started, until a build takes it, with the error it failed with if it did. */
let prestarted: { worker: Worker; failed: Error | null } | null = null;

/**
 * Starts the build thread before the command line has loaded its own modules (bin/vidfeeds.js, for
 * `vidfeeds build`): the thread loads the build's modules meanwhile, about 0.1 s of each build's
 * start, and waits for its input (runBuildThread). It touches no file before then, and does not
 * keep the process alive: a command that stops earlier (a bad flag) exits as before.
 */
export function prestartBuildThread(): void {
  if (process.env.VIDFEEDS_BUILD_THREAD === '0' || prestarted !== null) return;
  const entry: { worker: Worker; failed: Error | null } = { worker: startWorker(), failed: null };
  // Heard before a build listens (a module that fails to load): that build starts a thread of its
  // own instead, whose failure it then reports as any build thread's.
  entry.worker.once('error', (error) => (entry.failed = error));
  entry.worker.unref();
  prestarted = entry;
}

/**
 * Resolves with the build's report; rejects with an ExitError carrying the exit code the thread gave
 * its error. `VIDFEEDS_BUILD_THREAD=0` builds on this thread instead: about 0.2 s of CPU less per
 * build (the thread loads the build's modules again), but a signal then ends the process at once,
 * leaving the staging folder and lock for the next build to clear (docs/report.md).
 */
export function runBuildThread(input: Omit<BuildThreadInput, 'interrupt'>, events: BuildThreadEvents): Promise<BuildReport> {
  if (process.env.VIDFEEDS_BUILD_THREAD === '0') return runBuildHere(input, events);
  const flag = new InterruptFlag();
  const taken = prestarted;
  prestarted = null;
  const worker = taken !== null && taken.failed === null && taken.worker.threadId !== -1 ? taken.worker : startWorker();
  worker.ref();
  worker.postMessage({ ...input, interrupt: flag.buffer } satisfies BuildThreadInput);
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => {
    flag.raise(signal);
    for (const s of signals) process.off(s, onSignal);
    events.stopping?.(signal);
  };
  for (const s of signals) process.on(s, onSignal);
  return new Promise<BuildReport>((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      for (const s of signals) process.off(s, onSignal);
      fn();
    };
    worker.on('message', (message: BuildThreadMessage) => {
      switch (message.type) {
        case 'progress':
          return events.progress?.(message.done);
        case 'warn':
          return events.warn(message.message);
        case 'started':
          return events.started?.(message);
        case 'skipped':
          return events.skipped?.(message.skipped);
        case 'failed':
          return events.failed?.(message.failure);
        case 'wrote':
          return events.wrote?.(message.paths);
        case 'removed':
          return events.removed?.(message.paths);
        case 'done':
          return settle(() => resolve(message.report));
        case 'error': {
          const error = new ExitError(message.message, message.exitCode);
          if (message.stack !== undefined) error.stack = message.stack;
          return settle(() => reject(error));
        }
      }
    });
    worker.on('error', (error) => settle(() => reject(error)));
    worker.on('exit', (code) => settle(() => reject(new Error(`the build thread stopped (exit code ${code}) without a report`))));
  });
}

/** The same build on this thread, with the same events (`VIDFEEDS_BUILD_THREAD=0`). */
async function runBuildHere(input: Omit<BuildThreadInput, 'interrupt'>, events: BuildThreadEvents): Promise<BuildReport> {
  const { buildSite } = await import('../pipeline/site-build.js');
  const { describeSkip } = await import('../pipeline/build-report.js');
  const { request, config } = input;
  return buildSite({
    ...request,
    only: request.only === undefined ? undefined : new Set(request.only),
    config,
    reporter: {
      progress: input.progress ? (done) => events.progress?.(done) : undefined,
      warn: (message) => events.warn(message),
      started: (plan) => events.started?.(plan),
      skipped: (skipped) => events.skipped?.({ ...skipped, reason: describeSkip(skipped) }),
      failed: (failure) => events.failed?.(failure),
      wrote: input.paths ? (path) => events.wrote?.([path]) : undefined,
      removed: input.paths ? (path) => events.removed?.([path]) : undefined,
    },
  });
}
