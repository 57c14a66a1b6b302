import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import type { SiteConfig } from '../config/config.js';
import { ConfigError } from '../config/config-error.js';
import type { ValueIssue } from '../db/decode.js';
import type { UserRow } from '../db/site-reader.js';
import type { UserPart } from '../model/views.js';
import type { Encoding } from '../paths/compression.js';
import type { BuildFingerprint } from './incremental.js';
import type { WriteLane } from './output-writer.js';
import { STALL_MS } from './write-pool.js';

/**
 * Users' documents read and rendered on worker threads (render-worker.ts), for the builds that
 * render every user: on a feed-heavy site reading a user's bundle and rendering its feeds costs
 * more than writing the files (docs/performance.md, "Where the time goes"), and the main thread
 * was the one busy core while the write thread waited.
 *
 * Each worker opens the database on a connection of its own and reads inside a read transaction
 * begun after the build's: it renders only if that transaction sees the build's snapshot (the same
 * change log position) and its configuration and templates hash as the build's; otherwise it says
 * why and the build renders on its own thread, as without the pool. The main thread sends batches
 * of user ids in order and takes the rendered documents back in the same order, so the build
 * (hashes, the state, the writer, failures) goes exactly as when it renders them itself.
 *
 * In a build into an empty directory, where every document is written whatever it holds, a worker
 * writes its users' files (write-beside-and-rename, as the build's writer): through a lane of the
 * build's write thread, so one thread creates every file, or itself when there is no write thread.
 * It sends back each document's SHA-1, size and bytes written, which the build records in order as
 * if it had written them; the users the build thread renders meanwhile it writes at once. A build
 * that stops early (a signal, a failure) still records the files the workers wrote
 * (`RenderJob.writes`), and flushes the lanes, so no file on disk lacks its record.
 *
 * The build stays synchronous: the main thread waits on a shared counter (Atomics.wait) that a
 * worker bumps after each message, and takes messages with receiveMessageOnPort.
 */
const WORKER = new URL('./render-worker.js', import.meta.url);
const START_TIMEOUT_MS = 10_000;
/** Users per batch, and batches in flight per worker: enough to keep a worker busy, few enough to keep memory flat. */
const BATCH_USERS = 16;
const IN_FLIGHT_PER_WORKER = 3;
const YOUNG_GENERATION_MB = 16;

/**
 * A rendered document; or, from a thread that writes its users' files (a build into an empty
 * directory), what it wrote; or why its render failed (the message of what the renderer threw).
 */
export type RenderedDocument = { body: string } | { written: WrittenForm } | { error: string };

/**
 * A document a thread wrote: the SHA-1 of its bytes (hex: a Uint8Array per document made the build
 * thread's garbage collector three times as busy), their length, and the bytes written with its
 * compressed forms.
 */
export interface WrittenForm {
  hash: string;
  size: number;
  bytes: number;
}

/** A user's documents, one per user format, in the order of the formats the build renders. */
export interface RenderedUser {
  row: UserRow;
  documents: RenderedDocument[];
}

/** What a worker needs to read and render as the build does. */
export interface RenderWorkerData {
  db: string;
  config: SiteConfig;
  /** The build's "now", in milliseconds. */
  now: number;
  formats: string[];
  parts: UserPart[];
  /** The build's change log position: a worker reading another snapshot renders nothing. */
  position: number;
  fingerprint: BuildFingerprint;
  /**
   * Where the worker writes each user's files itself, with these compressed forms: in a build into
   * an empty directory, where every document is written; through `lane` when the build's write
   * thread gave one (the worker then creates no files of its own). Null: it sends the documents back.
   */
  writeTo: { root: string; compression: Encoding[]; lane: WriteLane | null } | null;
  signal: Int32Array;
  port: MessagePort;
}

/** Main thread to worker: users by id, and their names (which name their files). */
export interface RenderRequest {
  batch: number;
  ids: number[];
  usernames: string[];
}

/** Worker to main thread. */
export type RenderReply =
  | { ready: true }
  | { refused: string }
  | { batch: number; users: RenderedDocument[][]; issues: ValueIssue[] }
  | { fatal: string };

export interface RenderPoolOptions {
  db: string;
  /** The output directory, where threads that write their users' files write them. */
  out: string;
  config: SiteConfig;
  now: Date;
  fingerprint: BuildFingerprint;
  /** Worker threads that read and render. */
  threads: number;
  /** Worker threads that also write, for builds into an empty directory (`RenderJob.writes`). */
  writingThreads: number;
  /** How long the build waits for a render thread that answers nothing before it fails (write-pool.ts, STALL_MS); tests shorten it. */
  stallMs?: number;
}

/** What `render` is asked to do for a build. */
export interface RenderJob {
  formats: readonly string[];
  parts: ReadonlySet<UserPart>;
  /** The build's change log position: threads that read another snapshot render nothing. */
  position: number;
  /**
   * Renders one user on this thread: for a build of fewer users than a batch (no thread is
   * started), for every user when the workers cannot render this build's snapshot, and for batches
   * of its own while the oldest batch is still on a worker, so this thread renders too instead of
   * waiting.
   */
  local: (row: UserRow) => RenderedDocument[];
  /** What a worker's reader found wrong in values (src/db/decode.ts), to report as the build's reader would. */
  issues?: (found: readonly ValueIssue[]) => void;
  /**
   * The build started with an empty directory, so it writes every document: the threads write
   * their users' files themselves (with these compressed forms) and send back only what the state
   * records of them. Users this thread renders come back as text, written by the build as usual.
   * When the build stops before taking every user (a signal, an error), `unclaimed` gets the users
   * whose files a thread has written but the build has not taken, so their records are kept too.
   */
  writes?: {
    compression: readonly Encoding[];
    unclaimed: (user: RenderedUser) => void;
    /**
     * Opens a lane into the build's write thread for one render thread (write-pool.ts), through
     * which it hands over its files instead of creating them itself; null (or absent) when the
     * build's writer has no thread, and the render thread then writes its files itself.
     */
    lane?: () => WriteLane | null;
  };
}

/** A batch of users in the order the build emits them; `documents` once rendered. */
interface Batch {
  number: number;
  rows: UserRow[];
  documents?: RenderedDocument[][];
  /** Users the build has taken. */
  taken: number;
}

interface PoolWorker {
  worker: Worker;
  port: MessagePort;
  signal: Int32Array;
  seen: number;
}

export class RenderPool {
  private workers: PoolWorker[] = [];
  /** Whether the running workers write their users' files. */
  private workersWrite = false;
  /** Why the pool renders nothing in this build (a worker saw another snapshot), once known. */
  refused: string | null = null;
  /** How many worker threads rendered in the last `render`. */
  threadsUsed = 0;

  constructor(private readonly options: RenderPoolOptions) {}

  /** The rendered documents of `rows`, in order (see RenderJob). */
  *render(rows: Iterable<UserRow>, job: RenderJob): Generator<RenderedUser> {
    const { local } = job;
    const issues = job.issues ?? (() => {});
    const iterator = rows[Symbol.iterator]();
    let exhausted = false;
    const take = (): UserRow[] => {
      const batch: UserRow[] = [];
      while (!exhausted && batch.length < BATCH_USERS) {
        const next = iterator.next();
        if (next.done) exhausted = true;
        else batch.push(next.value);
      }
      return batch;
    };
    const first = take();
    if (first.length < BATCH_USERS || !this.start(job)) {
      for (const row of first) yield { row, documents: local(row) };
      for (let next = iterator.next(); !next.done; next = iterator.next()) yield { row: next.value, documents: local(next.value) };
      return;
    }
    this.threadsUsed = this.workers.length;
    /** Batches in order: sent to a worker, or rendered here (`documents` set at once). */
    const queue: Batch[] = [];
    const sent = new Map<PoolWorker, Batch[]>(this.workers.map((worker) => [worker, []]));
    let number = 0;
    const renderHere = (batchRows: UserRow[]) => {
      // Queued first and filled as it goes: when writing, a user rendered here is on disk at once,
      // and a build stopped half-way through the batch must still find it (settleWritten).
      const documents: RenderedDocument[][] = [];
      queue.push({ number: number++, rows: batchRows, documents, taken: 0 });
      for (const row of batchRows) documents.push(local(row));
    };
    /** Sends a batch to the worker with the fewest in flight, if one has room; false otherwise. */
    const send = (batchRows: UserRow[]): boolean => {
      let chosen: PoolWorker | undefined;
      for (const worker of this.workers) if (sent.get(worker)!.length < IN_FLIGHT_PER_WORKER && (chosen === undefined || sent.get(worker)!.length < sent.get(chosen)!.length)) chosen = worker;
      if (chosen === undefined) return false;
      const batch: Batch = { number: number++, rows: batchRows, taken: 0 };
      const request: RenderRequest = { batch: batch.number, ids: batchRows.map((row) => row.id), usernames: batchRows.map((row) => row.username) };
      chosen.port.postMessage(request);
      sent.get(chosen)!.push(batch);
      queue.push(batch);
      return true;
    };
    /** Takes whatever the workers have answered; with `block`, waits for the worker of the oldest batch. */
    const collect = (block: PoolWorker | null, timeoutMs = Infinity) => {
      for (const worker of this.workers) {
        for (;;) {
          const reply = this.next(worker, worker === block ? timeoutMs : 0);
          if (reply === null) break;
          const batch = sent.get(worker)!.shift();
          if ('fatal' in reply) throw new Error(reply.fatal);
          if (batch === undefined || !('batch' in reply) || reply.batch !== batch.number) throw new Error('a render thread answered out of order');
          batch.documents = reply.users;
          if (reply.issues.length > 0) issues(reply.issues);
          if (worker === block) break;
        }
      }
    };
    let pending = first;
    let finished = false;
    try {
      for (;;) {
        // Keep every worker fed.
        while (pending.length > 0 && send(pending)) pending = take();
        collect(null);
        const oldest = queue[0];
        if (oldest === undefined) {
          if (pending.length === 0) break;
          renderHere(pending);
          pending = take();
          continue;
        }
        if (oldest.documents === undefined) {
          // The oldest batch is on a worker: render the next one here meanwhile, within a bound.
          if (pending.length > 0 && queue.length < this.workers.length * IN_FLIGHT_PER_WORKER * 2) {
            renderHere(pending);
            pending = take();
            continue;
          }
          const owner = [...sent].find(([, batches]) => batches[0] === oldest)![0];
          collect(owner);
        }
        const documents = oldest.documents!;
        // Taken off the queue once its last user is taken: a build that stops half-way through a
        // batch still finds the rest of it there.
        while (oldest.taken < oldest.rows.length) {
          const i = oldest.taken++;
          yield { row: oldest.rows[i]!, documents: documents[i]! };
        }
        queue.shift();
      }
      finished = true;
    } finally {
      // Stopped early (a signal, a failure): files the workers wrote must not go unrecorded.
      if (!finished && job.writes !== undefined) this.settleWritten(queue, sent, collect, job.writes.unclaimed);
    }
  }

  /**
   * Hands `unclaimed` every user whose files are written and the build has not taken: those of
   * the batches rendered here and answered by workers and still queued, and of those in flight,
   * once answered (a worker finishes the batch it is on). Best effort: the build is failing or
   * stopping already.
   */
  private settleWritten(
    queue: readonly Batch[],
    sent: Map<PoolWorker, Batch[]>,
    collect: (block: PoolWorker | null, timeoutMs?: number) => void,
    unclaimed: (user: RenderedUser) => void,
  ): void {
    try {
      for (const [worker, batches] of sent) {
        while (batches.length > 0) {
          const waiting = batches.length;
          collect(worker, START_TIMEOUT_MS);
          // Nothing in time: the worker has stopped, and what it wrote of those batches is lost.
          if (batches.length === waiting) break;
        }
      }
    } catch {
      // A worker that failed or stopped: what it answered is settled below, the rest is lost.
    }
    for (const batch of queue) {
      const documents = batch.documents ?? [];
      for (let i = batch.taken; i < documents.length; i++) unclaimed({ row: batch.rows[i]!, documents: documents[i]! });
    }
  }

  close(): void {
    for (const { worker, port } of this.workers) {
      void worker.terminate();
      port.close();
    }
    this.workers = [];
  }

  /** Starts the workers and waits until each has its snapshot; false (and none kept) if any cannot render this build. */
  private start({ formats, parts, position, writes }: RenderJob): boolean {
    if (this.refused !== null) return false;
    const writing = writes !== undefined;
    if (this.workers.length > 0 && this.workersWrite === writing) return true;
    this.close();
    const count = writing ? this.options.writingThreads : this.options.threads;
    if (count === 0) return false;
    this.workersWrite = writing;
    for (let i = 0; i < count; i++) {
      const channel = new MessageChannel();
      const signal = new Int32Array(new SharedArrayBuffer(4));
      const lane = writes?.lane?.() ?? null;
      const data: RenderWorkerData = {
        db: this.options.db,
        config: this.options.config,
        now: this.options.now.getTime(),
        formats: [...formats],
        parts: [...parts],
        position,
        fingerprint: this.options.fingerprint,
        writeTo: writes === undefined ? null : { root: resolve(this.options.out), compression: [...writes.compression], lane },
        signal,
        port: channel.port2,
      };
      let reply: RenderReply | null;
      try {
        const worker = new Worker(WORKER, {
          workerData: data,
          transferList: lane === null ? [channel.port2] : [channel.port2, lane.port],
          // Bounded young generation: the worker keeps a batch alive at a time (see docs/performance.md).
          resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
        });
        worker.unref();
        const entry: PoolWorker = { worker, port: channel.port1, signal, seen: 0 };
        this.workers.push(entry);
        reply = this.next(entry, START_TIMEOUT_MS);
      } catch (error) {
        reply = { refused: `a render thread could not start: ${(error as Error).message}` };
      }
      if (reply === null || !('ready' in reply)) {
        this.refused = reply === null ? 'a render thread did not start in time' : 'refused' in reply ? reply.refused : 'a render thread failed to start';
        this.close();
        return false;
      }
    }
    return true;
  }

  /**
   * The worker's next message, waiting up to `timeoutMs`; null if none came. Throws if the worker
   * has stopped: a waiting build cannot always tell (Node marks a worker stopped, threadId -1, only
   * on its parent's event loop, which a synchronous build does not run), so a worker that answers
   * nothing for the stall time (STALL_MS; a batch takes milliseconds) counts as stopped too.
   */
  private next(worker: PoolWorker, timeoutMs: number): RenderReply | null {
    const stallMs = this.options.stallMs ?? STALL_MS;
    const deadline = Date.now() + Math.min(timeoutMs, stallMs);
    for (;;) {
      const message = receiveMessageOnPort(worker.port);
      if (message !== undefined) {
        worker.seen++;
        return message.message as RenderReply;
      }
      if (worker.worker.threadId === -1) throw new Error('a render thread stopped (out of memory or a crash)');
      const left = deadline - Date.now();
      if (left <= 0) {
        if (timeoutMs > stallMs) throw new Error(`a render thread has answered nothing for ${stallMs / 1000} s: it has stopped (out of memory, or a crash)`);
        return null;
      }
      // Woken when the worker has posted more than we have taken.
      Atomics.wait(worker.signal, 0, worker.seen, Math.min(left, 1000));
    }
  }
}

/**
 * A render pool for a build of `db` into `out`, or null where there is none.
 *
 * In a build into an empty directory (every document is written) the threads also write their
 * users' files, through a lane of the build's write thread when it has one (so one thread creates
 * files), and send back only what the state records (hashes and sizes, not documents); in other
 * builds, which compare each document with what is there, they only read and render.
 *
 * By default there is one thread per core beyond the two that the build's own thread and the write
 * thread take, so none on 1 or 2 cores. On this project's 2-core machine a thread writing through a
 * lane takes 15 to 20% off a feed-heavy full build, for about 50 MB more, which the 200 MB target
 * of issue 17 does not leave (docs/performance.md, "Seventh session"); threads that only render
 * made builds slower. VIDFEEDS_RENDER_THREADS=N sets the number (0: none). None without a compiled
 * worker (running from sources).
 */
export function createRenderPool(options: Omit<RenderPoolOptions, 'threads' | 'writingThreads'>): RenderPool | null {
  const setting = process.env.VIDFEEDS_RENDER_THREADS;
  const cores = availableParallelism();
  let threads = Math.max(0, cores - 2);
  let writingThreads = threads;
  if (setting !== undefined) {
    threads = writingThreads = Number(setting);
    if (!/^\d+$/.test(setting) || threads > 64) throw new ConfigError([{ where: 'the environment', setting: 'VIDFEEDS_RENDER_THREADS', problem: `must be a whole number from 0 to 64, not ${JSON.stringify(setting)}` }]);
  }
  if ((threads === 0 && writingThreads === 0) || !existsSync(fileURLToPath(WORKER))) return null;
  return new RenderPool({ ...options, threads, writingThreads });
}
