import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { DirectoryWriter, type OutputWriter } from '../write/output-writer.js';

/**
 * A DirectoryWriter whose file system calls run on a worker thread, so the kernel's work of
 * creating files (most of a build's time, docs/performance.md) overlaps with reading and
 * rendering on the main thread. The files, the staging folder and the rename are the same as
 * DirectoryWriter's; the worker (write-worker.ts) places them with the same FilePlacer.
 *
 * The thread starts when the fifth batch fills, so a build of a few documents (most incremental
 * ones) writes them here and never waits for a thread to start.
 *
 * The build stays synchronous. Documents are copied into batches in a ring of fixed slots of
 * shared memory and a message per batch tells the worker which slot to write; the main thread
 * waits on a shared counter (Atomics.wait) before it reuses a slot the worker has not finished,
 * so memory stays fixed whatever the size of the site. A document larger than a slot is written
 * on the main thread. A failed write is reported at the next write, `flush` or `close`, naming
 * the file.
 */
const WORKER = new URL('./write-worker.js', import.meta.url);
/** How long the worker may take to start before the build writes without it. */
const START_TIMEOUT_MS = 10_000;
/** A batch is sent when it holds this many files or its slot is full: one message per batch. */
const BATCH_FILES = 256;
const SLOT_BYTES = 512 * 1024;
/** Slots in the ring, so batches in flight at most: 8 MB of documents, to ride out short stalls of the disk. */
const SLOTS = 16;
/**
 * Batches' worth of files (BATCHES_HERE × batchFiles) written on the build's own thread before
 * the write thread starts: a build of up to 1,024 files (watch's builds, most incremental ones)
 * never pays for starting a thread, which costs more CPU than such a build's own work
 * (docs/performance.md, "Figures behind the code");
 * a full build loses the overlap of its first 1,024 files only. Counted in files, not
 * batches: a few large files (sitemap parts and their compressed forms) fill a slot's bytes long
 * before its files, and would start the thread for a build of a dozen files.
 */
const BATCHES_HERE = 4;
/** The batch buffer a writer starts with, before its thread runs. */
const FIRST_BUFFER_BYTES = 64 * 1024;
/**
 * How long a wait for the write thread may see it finish nothing before the build fails: a thread
 * that stopped (out of memory, a crash) answers nothing more, and the build, waiting synchronously,
 * cannot hear that it stopped (Node tells a worker's parent only on its event loop). A batch takes
 * milliseconds, seconds on a very slow disk; ten minutes without one means the thread is gone.
 */
export const STALL_MS = 10 * 60_000;
/** The ring's shape; the defaults above except in tests, which make wrapping around the ring quick. */
export interface RingShape {
  slots: number;
  slotBytes: number;
  batchFiles: number;
  /** Batches' worth of files (times batchFiles) written on this thread before the thread starts (none when absent). */
  batchesHere?: number;
  /** STALL_MS unless given (tests). */
  stallMs?: number;
}

interface WorkerReport {
  error?: string;
}

/** What the worker gets per batch (write-worker.ts). */
export interface BatchMessage {
  paths: string[];
  /** File i is bytes [ends[i - 1] ?? 0, ends[i]) of the batch's memory. */
  ends: number[];
  /** The slot of the ring that holds the batch's bytes. */
  slot: number;
  /** Files were removed since the last batch: the worker forgets the folders it knows. */
  removed: boolean;
}

export class ThreadedDirectoryWriter implements OutputWriter {
  private readonly direct: DirectoryWriter;
  /** Started when the first batch fills: a build of a few documents never waits for a thread. */
  private worker: Worker | null = null;
  private port: MessagePort | null = null;
  /** The worker did not start in time: every batch is written here. */
  private threadless = false;
  /** [0]: batches the worker finished; [1]: 1 once the worker runs. */
  private readonly done = new Int32Array(new SharedArrayBuffer(8));
  /**
   * Made when the thread starts: until then (and for a build that never fills a batch, as most of
   * watch's do) the batch lives in a small buffer of this thread, grown as needed. Watch starts a
   * writer per build, and an 8 MB ring for each would be garbage the collector gets to late.
   */
  private ring: SharedArrayBuffer | null = null;
  private sent = 0;
  /** The batch being filled, in slot `sent % slots`. */
  private paths: string[] = [];
  private ends: number[] = [];
  private slot: Uint8Array;
  private bytes = 0;
  private removed = false;
  /** Files written on the build's own thread by `send` before the thread started. */
  private filesHere = 0;
  /** Paths of the batches not yet done, oldest first, and which batch last wrote each path. */
  private readonly inFlight: string[][] = [];
  private readonly pending = new Map<string, number>();
  /** Set when the thread has finished nothing for the stall time (waitFor). */
  private stopped: ThreadStopped | null = null;
  private closed = false;

  constructor(
    root: string,
    private readonly shape: RingShape = { slots: SLOTS, slotBytes: SLOT_BYTES, batchFiles: BATCH_FILES, batchesHere: BATCHES_HERE },
  ) {
    this.direct = new DirectoryWriter(root);
    this.slot = new Uint8Array(Math.min(FIRST_BUFFER_BYTES, shape.slotBytes));
  }

  /** Whether the write thread has been started (a batch filled). */
  get threadStarted(): boolean {
    return this.worker !== null;
  }

  write(path: string, body: Buffer): void {
    if (body.length > this.shape.slotBytes) {
      // Larger than a slot (in practice a sitemap part, megabytes): written here, once the batches
      // before it are done, so writes to one path land in order. Moved to the worker in memory of
      // its own, it would stay there until the worker's rare garbage collections.
      this.flush();
      this.direct.write(path, body);
      return;
    }
    const target = this.direct.target(path);
    if (this.bytes + body.length > this.shape.slotBytes) this.send();
    if (this.bytes + body.length > this.slot.length) this.growBuffer(this.bytes + body.length);
    this.pending.set(target, this.sent);
    this.paths.push(target);
    this.slot.set(body, this.bytes);
    this.bytes += body.length;
    this.ends.push(this.bytes);
    if (this.paths.length >= this.shape.batchFiles) this.send();
  }

  get root(): string {
    return this.direct.root;
  }

  /** Asked here, on the build's thread, before the document is handed to the write thread. */
  blocked(path: string): string | null {
    return this.direct.blocked(path);
  }

  size(path: string): number | null {
    this.settle(path);
    return this.direct.size(path);
  }

  remove(path: string): boolean {
    this.flush();
    this.removed = true;
    return this.direct.remove(path);
  }

  removeFolder(path: string): boolean {
    this.flush();
    const removed = this.direct.removeFolder(path);
    if (removed) this.removed = true;
    return removed;
  }

  holds(path: string, body: Buffer): boolean {
    this.settle(path);
    return this.direct.holds(path, body);
  }

  read(path: string, size: number): Buffer | null {
    this.settle(path);
    return this.direct.read(path, size);
  }

  isEmpty(): boolean {
    this.flush();
    return this.direct.isEmpty();
  }

  flush(): void {
    if (this.worker === null) {
      // The thread is not running: a batch that never filled is written here.
      this.writeHere();
    } else {
      this.send();
      this.waitUntil(0);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.flush();
    } finally {
      void this.worker?.terminate();
      this.port?.close();
      this.direct.close();
    }
  }

  /**
   * Waits for the write of `path` if one is under way, so questions about a file answer for what
   * this writer wrote to it. Other files are asked about without waiting: a build asks about
   * each path before it writes it, and the write thread keeps working meanwhile.
   */
  private settle(path: string): void {
    this.forgetFinished();
    if (this.pending.has(this.direct.target(path))) this.flush();
  }

  /** Sends the batch being filled, if any, and readies the next slot. */
  private send(): void {
    if (this.paths.length === 0) return;
    if (this.worker === null) {
      if (this.threadless || this.filesHere + this.paths.length <= (this.shape.batchesHere ?? 0) * this.shape.batchFiles) {
        this.filesHere += this.paths.length;
        return this.writeHere();
      }
      if (!this.startWorker()) return this.writeHere();
    }
    const message: BatchMessage = { paths: this.paths, ends: this.ends, slot: this.sent % this.shape.slots, removed: this.removed };
    this.worker!.postMessage(message);
    this.inFlight.push(this.paths);
    this.sent++;
    this.paths = [];
    this.ends = [];
    this.bytes = 0;
    this.removed = false;
    // The next batch goes in slot `sent % slots`: the batch that used it last must be written.
    this.waitUntil(this.shape.slots - 1);
    this.slot = this.slotOf(this.sent % this.shape.slots);
  }

  /** Starts the worker and waits for it to run; false if it did not start in time (it is then stopped). */
  private startWorker(): boolean {
    // The batch being sent is the first, in slot 0 of the ring made now.
    this.ring = new SharedArrayBuffer(this.shape.slots * this.shape.slotBytes);
    const first = this.slotOf(0);
    first.set(this.slot.subarray(0, this.bytes));
    this.slot = first;
    const channel = new MessageChannel();
    const worker = new Worker(WORKER, {
      workerData: { root: this.direct.root, done: this.done, ring: this.ring, slotBytes: this.shape.slotBytes, port: channel.port2 },
      transferList: [channel.port2],
      // The worker keeps almost nothing alive; a small young generation makes it collect the
      // garbage of the batches' messages early instead of growing its heap by tens of megabytes.
      resourceLimits: { maxYoungGenerationSizeMb: 4 },
    });
    // The worker must not keep the process alive once the build is over.
    worker.unref();
    const running = Atomics.wait(this.done, 1, 0, START_TIMEOUT_MS) !== 'timed-out' || Atomics.load(this.done, 1) === 1;
    if (!running) {
      void worker.terminate();
      channel.port1.close();
      this.threadless = true;
      return false;
    }
    this.worker = worker;
    this.port = channel.port1;
    // A new worker knows no folders: nothing for it to forget.
    this.removed = false;
    return true;
  }

  /**
   * Writes the batch being filled on this thread (the same FilePlacer calls as the worker's). The
   * batch is taken first: after a failure, as on the worker, the rest of it is dropped.
   */
  private writeHere(): void {
    const { paths, ends } = this;
    this.paths = [];
    this.ends = [];
    this.bytes = 0;
    let start = 0;
    for (let i = 0; i < paths.length; i++) {
      const path = paths[i]!;
      this.pending.delete(path);
      try {
        this.direct.writeResolved(path, this.slot.subarray(start, ends[i]));
      } catch (error) {
        throw new Error(`cannot write ${path}: ${(error as Error).message}`, { cause: error });
      }
      start = ends[i]!;
    }
  }

  private slotOf(index: number): Uint8Array {
    return new Uint8Array(this.ring!, index * this.shape.slotBytes, this.shape.slotBytes);
  }

  /** The batch's buffer before the thread runs, doubled until `needed` bytes fit (a slot at most). */
  private growBuffer(needed: number): void {
    let size = this.slot.length;
    while (size < needed) size *= 2;
    const grown = new Uint8Array(Math.min(size, this.shape.slotBytes));
    grown.set(this.slot.subarray(0, this.bytes));
    this.slot = grown;
  }

  /** Blocks until at most `inFlight` batches are unfinished; throws what the worker reported. */
  private waitUntil(inFlight: number): void {
    this.waitFor(this.done, 0, () => this.sent - this.forgetFinished() <= inFlight);
  }

  /**
   * waitForProgress, throwing what the thread reported; a thread found stopped is remembered, so
   * the waits of the build's clean-up (flush, close) fail at once instead of waiting as long again.
   */
  private waitFor(counter: Int32Array, index: number, done: () => boolean): void {
    if (this.stopped !== null) throw this.stopped;
    try {
      waitForProgress(counter, index, this.shape.stallMs ?? STALL_MS, () => {
        this.throwReported();
        return done();
      });
    } catch (error) {
      if (error instanceof ThreadStopped) this.stopped = error;
      throw error;
    }
  }

  /** Drops the paths of the batches the worker has finished; returns how many it has finished. */
  private forgetFinished(): number {
    const finished = Atomics.load(this.done, 0);
    // inFlight[0] is batch number sent - inFlight.length.
    while (this.inFlight.length > 0 && this.sent - this.inFlight.length < finished) {
      const batch = this.sent - this.inFlight.length;
      for (const path of this.inFlight.shift()!) if (this.pending.get(path) === batch) this.pending.delete(path);
    }
    return finished;
  }

  private throwReported(): void {
    if (this.port === null) return;
    const message = receiveMessageOnPort(this.port)?.message as WorkerReport | undefined;
    if (message?.error !== undefined) throw new Error(message.error);
  }
}

/** The write thread has finished nothing for the stall time (STALL_MS). */
class ThreadStopped extends Error {
  override name = 'ThreadStopped';
}

/**
 * Waits until `done()`, woken when the write thread bumps `counter[index]` (the batches it has
 * finished); throws when the counter has not moved for `stallMs` (see STALL_MS).
 */
function waitForProgress(counter: Int32Array, index: number, stallMs: number, done: () => boolean): void {
  let seen = Atomics.load(counter, index);
  let since = Date.now();
  while (!done()) {
    const now = Atomics.load(counter, index);
    if (now !== seen) {
      seen = now;
      since = Date.now();
    } else if (Date.now() - since >= stallMs) {
      throw new ThreadStopped(`the write thread has finished nothing for ${stallMs / 1000} s: it has stopped (out of memory, or a crash) or the disk does not answer`);
    }
    Atomics.wait(counter, index, now, Math.min(1000, stallMs));
  }
}

/**
 * The writer for a build into `root`: the threaded one on a machine with more than one core,
 * unless `thread` says otherwise (the command line reads VIDFEEDS_WRITE_THREAD, for measurements).
 * This is the one place a build's parallelism is chosen: the stages see an OutputWriter.
 */
export function createDirectoryWriter(root: string, thread: boolean = availableParallelism() > 1): OutputWriter & { close(): void } {
  // The worker is compiled JavaScript: running from sources (tests), there is none to start.
  if (thread && existsSync(fileURLToPath(WORKER))) return new ThreadedDirectoryWriter(root);
  return new DirectoryWriter(root);
}
