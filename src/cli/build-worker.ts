import { parentPort } from 'node:worker_threads';
import { buildSite } from '../pipeline/site-build.js';
import { createSiteContext } from '../pipeline/render/site-context.js';
import { InterruptFlag } from '../pipeline/interrupt.js';
import { FORMATS } from '../formats/registry.js';
import { describeSkip } from '../pipeline/build-report.js';
import type { BuildThreadInput, BuildThreadMessage } from './build-thread.js';
import { exitCodeOf } from './errors.js';

/**
 * The thread `vidfeeds build` builds on (src/cli/build-thread.ts). It reports through messages:
 * written and removed paths in batches, everything else as it happens, then the report or the error
 * with its exit code.
 */

const port = parentPort!;
const post = (message: BuildThreadMessage) => port.postMessage(message);

// The input comes as a message, not as workerData: the thread may be started before the command
// line has read its flags (prestartBuildThread), and loads the build's modules meanwhile.
port.once('message', (input: BuildThreadInput) => build(input));

/** Paths sent to the main thread at a time. */
const BATCH = 2000;

function build(input: BuildThreadInput): void {
  const flag = new InterruptFlag(input.interrupt);
  let wrote: string[] = [];
  let removed: string[] = [];
  const flushPaths = () => {
    if (wrote.length > 0) post({ type: 'wrote', paths: wrote });
    if (removed.length > 0) post({ type: 'removed', paths: removed });
    wrote = [];
    removed = [];
  };

  try {
    const { request, config } = input;
    const site = createSiteContext(config, FORMATS);
    const report = buildSite({
      ...request,
      only: request.only === undefined ? undefined : new Set(request.only),
      config,
      site,
      stopRequested: () => flag.raised(),
      reporter: {
        progress: input.progress ? (done) => post({ type: 'progress', done }) : undefined,
        warn: (message) => post({ type: 'warn', message }),
        started: (plan) => post({ type: 'started', ...plan }),
        skipped: (skipped) => post({ type: 'skipped', skipped: { ...skipped, reason: describeSkip(skipped) } }),
        failed: (failure) => post({ type: 'failed', failure }),
        wrote: input.paths
          ? (path) => {
              if (wrote.push(path) >= BATCH) flushPaths();
            }
          : undefined,
        removed: input.paths
          ? (path) => {
              if (removed.push(path) >= BATCH) flushPaths();
            }
          : undefined,
      },
    });
    flushPaths();
    post({ type: 'done', report });
  } catch (error) {
    flushPaths();
    post({ type: 'error', message: (error as Error).message ?? String(error), exitCode: exitCodeOf(error), stack: (error as Error).stack });
  }
}
