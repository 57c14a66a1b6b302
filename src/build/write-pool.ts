import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { DirectoryWriter, type OutputWriter } from './output-writer.js';

/**
 * A DirectoryWriter whose file system calls run on a worker thread, so the kernel's work of
 * creating files (most of a build's time, docs/performance.md) overlaps with reading and
 * rendering on the main thread. The files, the staging folder and the rename are the same as
 * DirectoryWriter's; the worker (write-worker.ts) does the same calls in the same order.
 *
 * The build stays synchronous: documents go to the worker in batches, and when too many batches
 * are in flight the main thread waits on a shared counter (Atomics.wait), so memory stays bounded.
 * A failed write is reported at the next write, `flush` or `close`, naming the file.
 */
const WORKER = new URL('./write-worker.js', import.meta.url);
/** How long the worker may take to start before the build writes without it. */
const START_TIMEOUT_MS = 10_000;
const BATCH_FILES = 64;
const BATCH_BYTES = 256 * 1024;
const MAX_IN_FLIGHT = 8;

interface WorkerReport {
  error?: string;
}

export class ThreadedDirectoryWriter implements OutputWriter {
  private readonly direct: DirectoryWriter;
  private readonly worker: Worker;
  private readonly port: MessagePort;
  /** [0]: batches the worker finished; [1]: 1 once the worker runs. */
  private readonly done = new Int32Array(new SharedArrayBuffer(8));
  private sent = 0;
  private paths: string[] = [];
  private bodies: Uint8Array[] = [];
  private bytes = 0;
  /** Files removed since the last batch: the worker must forget the directories it knows. */
  private removed = false;
  /** Paths of the batches not yet done, oldest first, and which batch last wrote each path. */
  private readonly inFlight: string[][] = [];
  private readonly pending = new Map<string, number>();
  private closed = false;

  constructor(root: string) {
    this.direct = new DirectoryWriter(root);
    const channel = new MessageChannel();
    this.port = channel.port1;
    this.worker = new Worker(WORKER, {
      workerData: { root: this.direct.root, done: this.done, port: channel.port2 },
      transferList: [channel.port2],
    });
    // The worker must not keep the process alive once the build is over.
    this.worker.unref();
  }

  /** Waits for the worker to run; false if it did not start in time (it is then stopped). */
  started(): boolean {
    if (Atomics.wait(this.done, 1, 0, START_TIMEOUT_MS) !== 'timed-out' || Atomics.load(this.done, 1) === 1) return true;
    void this.worker.terminate();
    this.port.close();
    return false;
  }

  write(path: string, body: Buffer): void {
    const target = this.direct.target(path);
    this.paths.push(target);
    this.pending.set(target, this.sent);
    // A copy with its own memory, so it can be moved to the worker (small Buffers share a pool).
    const own = new Uint8Array(body.length);
    own.set(body);
    this.bodies.push(own);
    this.bytes += body.length;
    if (this.paths.length >= BATCH_FILES || this.bytes >= BATCH_BYTES) this.send();
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

  holds(path: string, body: Buffer): boolean {
    this.settle(path);
    return this.direct.holds(path, body);
  }

  isEmpty(): boolean {
    this.flush();
    return this.direct.isEmpty();
  }

  flush(): void {
    this.send();
    this.waitUntil(0);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.flush();
    } finally {
      void this.worker.terminate();
      this.port.close();
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

  private send(): void {
    if (this.paths.length > 0) {
      const message = { paths: this.paths, bodies: this.bodies, removed: this.removed };
      this.worker.postMessage(message, this.bodies.map((b) => b.buffer as ArrayBuffer));
      this.inFlight.push(this.paths);
      this.sent++;
      this.paths = [];
      this.bodies = [];
      this.bytes = 0;
      this.removed = false;
    }
    this.waitUntil(MAX_IN_FLIGHT);
  }

  /** Blocks until at most `inFlight` batches are unfinished; throws what the worker reported. */
  private waitUntil(inFlight: number): void {
    for (;;) {
      this.throwReported();
      const finished = this.forgetFinished();
      if (this.sent - finished <= inFlight) return;
      Atomics.wait(this.done, 0, finished, 1000);
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
    const message = receiveMessageOnPort(this.port)?.message as WorkerReport | undefined;
    if (message?.error !== undefined) throw new Error(message.error);
  }
}

/**
 * The writer for a build into `root`: on a machine with more than one core the threaded one,
 * unless VIDFEEDS_WRITE_THREAD=0 (measurements, docs/performance.md).
 */
export function createDirectoryWriter(root: string): OutputWriter & { close(): void } {
  const wanted = process.env.VIDFEEDS_WRITE_THREAD !== undefined ? process.env.VIDFEEDS_WRITE_THREAD !== '0' : availableParallelism() > 1;
  // The worker is compiled JavaScript: running from sources (tests), there is none to start.
  if (wanted && existsSync(fileURLToPath(WORKER))) {
    const writer = new ThreadedDirectoryWriter(root);
    if (writer.started()) return writer;
  }
  return new DirectoryWriter(root);
}
