import { parentPort, threadId, workerData, type MessagePort } from 'node:worker_threads';
import { FilePlacer } from '../write/output-writer.js';
import type { BatchMessage } from './write-pool.js';

/**
 * The worker of ThreadedDirectoryWriter (write-pool.ts): places each file of a batch as
 * DirectoryWriter does (FilePlacer: into the staging folder, renamed into place), then counts the
 * batch done, which frees its slot of the ring. Paths arrive resolved and checked by the main thread.
 */
const { root, done, ring, slotBytes, port } = workerData as {
  root: string;
  done: Int32Array;
  ring: SharedArrayBuffer;
  slotBytes: number;
  port: MessagePort;
};
const placer = new FilePlacer(root, `${process.pid}-w${threadId}`);
/** The first write that failed, reported to the main thread; the rest of the build's writes are dropped. */
let failed: string | null = null;

parentPort!.on('message', onMessage);

function onMessage(message: BatchMessage): void {
  const { paths, ends, slot, removed } = message;
  // A batch is always counted done, or the main thread would wait for it forever.
  try {
    if (removed) placer.dirs.forget();
    placeAll(paths, ends, new Uint8Array(ring, slot * slotBytes, slotBytes));
  } finally {
    Atomics.add(done, 0, 1);
    Atomics.notify(done, 0);
  }
}

// The main thread waits for this before it sends anything (ThreadedDirectoryWriter.started).
Atomics.store(done, 1, 1);
Atomics.notify(done, 1);

function placeAll(paths: string[], ends: number[], data: Uint8Array): void {
  if (failed !== null) return;
  for (let i = 0; i < paths.length; i++) {
    try {
      placer.place(paths[i]!, data.subarray(i === 0 ? 0 : ends[i - 1], ends[i]));
    } catch (error) {
      // Reported once; the rest of the build's writes are dropped and the build fails.
      failed = `cannot write ${paths[i]}: ${(error as Error).message}`;
      port.postMessage({ error: failed });
      return;
    }
  }
}
