import { fork, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { RunSettings } from '../config/run-settings.js';
import { deployTargetOf } from './deploy-target.js';

/**
 * `vidfeeds watch --deploy s3://…` (or `deploy.to` in the configuration): after each build, `vidfeeds deploy` of the tree, in a process
 * of its own (a deploy that is stopped or killed never takes the watch with it) that stays for the
 * next one (src/cli/deploy-worker.ts), so a deploy costs its requests, not a start. One deploy at a
 * time: builds that finish while one runs are carried by the next, which starts as soon as it
 * ends. The deploy is incremental (src/deploy/deploy-basis.ts), so each sends what every build
 * since the last one that succeeded changed; it tells hubs, IndexNow and the `--on-change` command,
 * and keeps what it owes them until they hear it. A deploy that fails (the store down or
 * throttling, exit 75; an object refused or a listener not reached, 1; credentials, 2) is tried
 * again after a back-off that doubles up to five minutes, and at once after the next build: the
 * store is late, and no change is lost.
 */

export interface WatchDeployFlags {
  deploy?: string;
  endpoint?: string;
  concurrency?: number;
  tries?: number;
  timeout?: number;
  onChange?: string;
  notify: boolean;
  config?: string;
}

export interface WatchDeployOptions {
  /** The deploy's arguments after `vidfeeds deploy`. */
  args: string[];
  /** Told of each deploy's end: its exit code, and when the next try is when it failed. */
  onEnd: (code: number, retryInMs: number | null) => void;
  /** Told when a deploy releases the build lock, before its end when it holds the bytes it sends. */
  onTreeReleased?: () => void;
  retryMs?: number;
  maxRetryMs?: number;
  /** The deploys' process: node and its script (src/cli/deploy-worker.ts by default). */
  command?: [string, string];
}

/** src/cli/deploy-worker.ts, as compiled beside this file. */
const WORKER_SCRIPT = fileURLToPath(new URL('./deploy-worker.js', import.meta.url));
const DEFAULT_RETRY_MS = 2000;
const DEFAULT_MAX_RETRY_MS = 300_000;
/** How long a deploy waits for a build of the tree to release the lock. */
const LOCK_WAIT_SECONDS = 3600;

/**
 * The deploy's arguments for a watch's flags and its configuration's `deploy` setting (each flag
 * wins over its setting, which the configuration's checks have passed); a bad target stops the
 * watch before anything is touched. Null when neither names a target.
 */
export function watchDeployArgs(flags: WatchDeployFlags, tree: { out: string; stateFile: string }, setting: RunSettings['deploy'] = { to: null, endpoint: null }): string[] | null {
  const chosen = deployTargetOf({ to: flags.deploy, endpoint: flags.endpoint }, setting, '--deploy');
  if (chosen === null) return null;
  const { to, endpoint } = chosen;
  // The build state the watch's builds keep, wherever it is: the deploy sends what they changed.
  const args = ['--out', tree.out, '--state', tree.stateFile, '--to', to, '--wait', String(LOCK_WAIT_SECONDS)];
  const optional: Array<[string, string | number | undefined]> = [
    ['--endpoint', endpoint],
    ['--config', flags.config],
    ['--concurrency', flags.concurrency],
    ['--tries', flags.tries],
    ['--timeout', flags.timeout],
    ['--on-change', flags.onChange],
  ];
  for (const [flag, value] of optional) if (value !== undefined) args.push(flag, String(value));
  if (!flags.notify) args.push('--no-notify');
  return args;
}

export class DeployAfterBuilds {
  private worker: { child: ChildProcess; exited: Promise<void> } | null = null;
  /** Ends the deploy under way (null: none runs), however it ends: its answer, or its process's exit. */
  private finish: ((code: number) => void) | null = null;
  private wanted = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private stopping = false;

  constructor(private readonly options: WatchDeployOptions) {}

  /** A build finished: deploy now, or after the deploy under way. */
  request(): void {
    this.wanted = true;
    if (this.retryTimer !== null) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
    if (this.finish === null) this.next();
  }

  /** Whether a deploy runs now. */
  get busy(): boolean {
    return this.finish !== null;
  }

  /** Stops the deploy under way (SIGTERM: it aborts its requests, keeps what it owes) and starts no other. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const worker = this.worker;
    if (worker === null) return;
    worker.child.kill('SIGTERM');
    await worker.exited;
  }

  private next(): void {
    if (!this.wanted || this.stopping) return;
    this.wanted = false;
    const { child } = this.worker ?? this.startWorker();
    this.finish = (code) => {
      this.finish = null;
      this.ended(code);
    };
    child.send('deploy');
  }

  /** The deploys' process, started with the first deploy and again after one that ended it. */
  private startWorker(): NonNullable<DeployAfterBuilds['worker']> {
    const [program, script] = this.options.command ?? [process.execPath, WORKER_SCRIPT];
    const child = fork(script, this.options.args, { execPath: program, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    child.on('message', (message: { code?: unknown; treeReleased?: unknown }) => {
      if (message?.treeReleased === true) this.options.onTreeReleased?.();
      if (typeof message?.code === 'number') this.finish?.(message.code);
    });
    const exited = new Promise<void>((resolve) => {
      const gone = (code: number) => {
        if (this.worker?.child === child) this.worker = null;
        this.finish?.(code);
        resolve();
      };
      child.on('error', () => gone(1));
      // Ended by a signal: 128 + its number, as a shell reports it (137 for a kill -9).
      child.on('exit', (code, signal) => gone(code ?? (signal === null ? 1 : 128 + constants.signals[signal])));
    });
    this.worker = { child, exited };
    return this.worker;
  }

  private ended(code: number): void {
    if (code === 0 || this.stopping) {
      this.failures = 0;
      this.options.onEnd(code, null);
      this.next();
      return;
    }
    // Not published (or not all told): the next deploy carries it, as the deploy record keeps it owed.
    this.wanted = true;
    const delay = Math.min((this.options.retryMs ?? DEFAULT_RETRY_MS) * 2 ** this.failures, this.options.maxRetryMs ?? DEFAULT_MAX_RETRY_MS);
    this.failures++;
    this.options.onEnd(code, delay);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.next();
    }, delay);
    this.retryTimer.unref();
  }
}
