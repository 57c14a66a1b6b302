import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import type { SiteConfig } from '../../config/config.js';
import { ConfigError } from '../../config/config-error.js';
import type { ValueIssue } from '../../db/decode.js';
import type { UserRow } from '../../db/site-reader.js';
import type { UserPart } from '../../model/views.js';
import type { Encoding } from '../../paths/compression.js';
import type { BuildFingerprint } from '../plan/incremental.js';
import type { LentThread, WriteLane } from '../write/output-writer.js';
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
 * Where no thread of its own writes (2 cores), the pool may borrow the build's write thread
 * instead (OutputWriter.lendThread): it serves the pool as a render thread does (render-service.ts),
 * placing its users' files itself and writing the build thread's batches between its users. It is
 * borrowed only once it has shown time to spare (LEND_SPARE), which a build bound by creating files
 * never gives it; and the build thread renders ahead of it freely (WRITTEN_LOOKAHEAD), so a thread
 * slower than the build's never holds it up.
 *
 * The build stays synchronous: the main thread waits on a shared counter (Atomics.wait) that a
 * worker bumps after each message, and takes messages with receiveMessageOnPort.
 */
const WORKER = new URL('./render-worker.js', import.meta.url);
const START_TIMEOUT_MS = 10_000;
/** Users per batch, and batches in flight per worker: enough to keep a worker busy, few enough to keep memory flat. */
const BATCH_USERS = 16;
const IN_FLIGHT_PER_WORKER = 3;
/**
 * Batches the build thread may render ahead of the oldest one still on a thread, when threads
 * write their users' files: the batches it renders are written at once and hold only hashes, so
 * it need not wait for a thread slower than itself (the write thread lent to the pool renders in
 * the time its writes leave it). Otherwise the documents it holds bound it (IN_FLIGHT_PER_WORKER).
 */
const WRITTEN_LOOKAHEAD = 64;
/**
 * The share of its time the write thread must have spent waiting for work before the pool borrows
 * it. Into ext4 on this project's machine, at 300 ms: 0.45 on a feed-heavy site (rendering is the
 * slow part, and lending takes 10 to 15% off), 0.25 on the demo's, falling to 0.04 (writing many
 * small files is, and lending only costs memory). It was 0.4 while reading was slower: once
 * better-sqlite3 built rows faster (scripts/better-sqlite3-node20.mjs), a feed-heavy bench run
 * never reached it and took 5.9 s at 50,000 users where lent builds take 5.3 to 5.9
 * (docs/performance.md, "Twelfth session").
 */
const LEND_SPARE = 0.3;
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
  /**
   * Whether the build's write thread reads and renders too, when no thread here writes
   * (`writingThreads` 0), in a build into an empty directory (`RenderJob.writes.lendThread`):
   * 'spare' once it has shown it has time to spare (LEND_SPARE), 'always' from the first batch.
   */
  lendWriteThread: 'never' | 'spare' | 'always';
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
    /**
     * Lends the build's write thread to the pool (OutputWriter.lendThread), which then reads and
     * renders users as a render thread does and writes their files between its batches; null (or
     * absent) when the writer has no thread.
     */
    lendThread?: (data: RenderWorkerData) => LentThread | null;
    /**
     * The share of its time the write thread has had nothing to do, once it has run long enough
     * to tell (OutputWriter.spareTime); null before. The pool borrows it only when it is at least
     * LEND_SPARE, and until then renders here.
     */
    spareTime?: () => number | null;
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

/** A thread serving the pool: a render thread of its own, or the build's write thread lent to it. */
interface PoolWorker {
  port: MessagePort;
  signal: Int32Array;
  seen: number;
  /** Whether the thread is known to have stopped (Worker.threadId: known only on the event loop). */
  stopped(): boolean;
  /** Ends its part in the build: a render thread is stopped, a lent thread closes its connection. */
  end(): void;
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
    if (this.wouldLend(job) && this.options.lendWriteThread === 'spare') {
      // Render here until the write thread has shown time to spare over its life so far. Asked
      // again at each user, not once: a disk busy for the thread's first moments (a delete still
      // settling) kept a feed-heavy build from lending it at all, 7.1 s against 6.0.
      const spare = job.writes!.spareTime!;
      for (let share = spare(); share === null || share < LEND_SPARE; share = spare()) {
        const next = iterator.next();
        if (next.done) {
          if (share !== null) this.refused = 'the write thread had no time to spare';
          return;
        }
        yield { row: next.value, documents: local(next.value) };
      }
    }
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
    const lookahead = this.workersWrite ? WRITTEN_LOOKAHEAD : this.workers.length * IN_FLIGHT_PER_WORKER * 2;
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
          if (pending.length > 0 && queue.length < lookahead) {
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
    for (const { end, port } of this.workers) {
      end();
      port.close();
    }
    this.workers = [];
  }

  /** Whether the pool may borrow the build's write thread for this job: it writes, no thread of its own writes, and lending is on. */
  private lends({ writes }: RenderJob): boolean {
    return writes?.lendThread !== undefined && this.options.writingThreads === 0 && this.options.lendWriteThread !== 'never';
  }

  /** Whether this build would borrow the write thread (see start), which it decides once the thread has run a while. */
  private wouldLend(job: RenderJob): boolean {
    return this.lends(job) && job.writes!.spareTime !== undefined && this.workers.length === 0 && this.refused === null;
  }

  /** Starts the workers and waits until each has its snapshot; false (and none kept) if any cannot render this build. */
  private start(job: RenderJob): boolean {
    const { formats, parts, position, writes } = job;
    if (this.refused !== null) return false;
    const writing = writes !== undefined;
    if (this.workers.length > 0 && this.workersWrite === writing) return true;
    this.close();
    const count = writing ? this.options.writingThreads : this.options.threads;
    const lend = this.lends(job);
    if (count === 0 && !lend) return false;
    this.workersWrite = writing;
    for (let i = 0; i < (lend ? 1 : count); i++) {
      const channel = new MessageChannel();
      const signal = new Int32Array(new SharedArrayBuffer(4));
      // The write thread writes what it renders itself: no lane.
      const lane = lend ? null : (writes?.lane?.() ?? null);
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
        const entry: PoolWorker = { port: channel.port1, signal, seen: 0, ...(lend ? this.lent(writes!, data) : this.started(data, lane)) };
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

  /** A render thread of its own, started on `data`. */
  private started(data: RenderWorkerData, lane: WriteLane | null): Pick<PoolWorker, 'stopped' | 'end'> {
    const worker = new Worker(WORKER, {
      workerData: data,
      transferList: lane === null ? [data.port] : [data.port, lane.port],
      // Bounded young generation: the worker keeps a batch alive at a time (see docs/performance.md).
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    worker.unref();
    return { stopped: () => worker.threadId === -1, end: () => void worker.terminate() };
  }

  /** The build's write thread, lent to serve `data`; it goes on writing when the pool closes. */
  private lent(writes: NonNullable<RenderJob['writes']>, data: RenderWorkerData): Pick<PoolWorker, 'stopped' | 'end'> {
    const thread = writes.lendThread!(data);
    if (thread === null) throw new Error('the write thread is not running');
    return { stopped: () => thread.stopped(), end: () => {} };
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
      if (worker.stopped()) throw new Error('a render thread stopped (out of memory or a crash)');
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
 *
 * Where no thread writes (2 cores or fewer, or VIDFEEDS_RENDER_THREADS=0), a build into an empty
 * directory lends the pool its write thread instead, once the thread has shown it has time to spare
 * (a feed-heavy site): it renders between its writes, at the cost of the formats' modules and a
 * connection, not a thread (docs/performance.md, "Eighth session").
 * VIDFEEDS_WRITE_THREAD_RENDERS=0 never lends it, =1 lends it from the first batch.
 */
export function createRenderPool(options: Omit<RenderPoolOptions, 'threads' | 'writingThreads' | 'lendWriteThread'>): RenderPool | null {
  const setting = process.env.VIDFEEDS_RENDER_THREADS;
  const cores = availableParallelism();
  let threads = Math.max(0, cores - 2);
  let writingThreads = threads;
  if (setting !== undefined) {
    threads = writingThreads = Number(setting);
    if (!/^\d+$/.test(setting) || threads > 64) throw new ConfigError([{ where: 'the environment', setting: 'VIDFEEDS_RENDER_THREADS', problem: `must be a whole number from 0 to 64, not ${JSON.stringify(setting)}` }]);
  }
  const lending = process.env.VIDFEEDS_WRITE_THREAD_RENDERS;
  if (lending !== undefined && lending !== '0' && lending !== '1') {
    throw new ConfigError([{ where: 'the environment', setting: 'VIDFEEDS_WRITE_THREAD_RENDERS', problem: `must be 0 or 1, not ${JSON.stringify(lending)}` }]);
  }
  const lendWriteThread = lending === undefined ? 'spare' : lending === '1' ? 'always' : 'never';
  if ((threads === 0 && writingThreads === 0 && lendWriteThread === 'never') || !existsSync(fileURLToPath(WORKER))) return null;
  return new RenderPool({ ...options, threads, writingThreads, lendWriteThread });
}
