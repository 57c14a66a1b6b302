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
 * Large documents (256 KB or more: sitemap parts) are written on the main thread.
 * A failed write is reported at the next write, `flush` or `close`, naming the file.
 */
const WORKER = new URL('./write-worker.js', import.meta.url);
/** How long the worker may take to start before the build writes without it. */
const START_TIMEOUT_MS = 10_000;
const BATCH_FILES = 64;
const BATCH_BYTES = 256 * 1024;
const MAX_IN_FLIGHT = 8;
/** Bodies of this size or more are written on the calling thread (see `write`). */
const DIRECT_BYTES = BATCH_BYTES;

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
    if (body.length >= DIRECT_BYTES) {
      // Written here instead. Copied and moved to the worker, a large body (a sitemap part:
      // megabytes) stays in memory until the worker's GC collects it, which the worker's few
      // allocations seldom bring on: a big site's dozens of parts piled up there (60 MB at
      // 100,000 users). One write of megabytes gains little from a thread anyway. The batches
      // before it are finished first, so writes to one path still land in order.
      this.flush();
      this.direct.write(path, body);
      return;
    }
    this.paths.push(this.direct.target(path));
    // A copy with its own memory, so it can be moved to the worker (small Buffers share a pool).
    const own = new Uint8Array(body.length);
    own.set(body);
    this.bodies.push(own);
    this.bytes += body.length;
    if (this.paths.length >= BATCH_FILES || this.bytes >= BATCH_BYTES) this.send();
  }

  size(path: string): number | null {
    return this.direct.size(path);
  }

  remove(path: string): boolean {
    this.flush();
    return this.direct.remove(path);
  }

  holds(path: string, body: Buffer): boolean {
    this.flush();
    return this.direct.holds(path, body);
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

  private send(): void {
    if (this.paths.length > 0) {
      this.worker.postMessage({ paths: this.paths, bodies: this.bodies }, this.bodies.map((b) => b.buffer as ArrayBuffer));
      this.sent++;
      this.paths = [];
      this.bodies = [];
      this.bytes = 0;
    }
    this.waitUntil(MAX_IN_FLIGHT);
  }

  /** Blocks until at most `inFlight` batches are unfinished; throws what the worker reported. */
  private waitUntil(inFlight: number): void {
    for (;;) {
      this.throwReported();
      const finished = Atomics.load(this.done, 0);
      if (this.sent - finished <= inFlight) return;
      Atomics.wait(this.done, 0, finished, 1000);
    }
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
