import { parentPort, threadId, workerData, type MessagePort } from 'node:worker_threads';
import { FilePlacer } from './output-writer.js';
import type { BatchMessage, LaneMessage } from './write-pool.js';

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
let failed = false;

parentPort!.on('message', (message: BatchMessage | LaneMessage) => {
  if ('lane' in message) return openLane(message);
  const { paths, ends, slot, removed } = message;
  // A batch is always counted done, or the main thread would wait for it forever.
  try {
    if (removed) placer.dirs.forget();
    writeBatch(paths, ends, new Uint8Array(ring, slot * slotBytes, slotBytes));
  } finally {
    Atomics.add(done, 0, 1);
    Atomics.notify(done, 0);
  }
});

/** Batches from another thread of the build (WriteLane), written by the same placer; failures go to the build thread. */
function openLane({ lane }: LaneMessage): void {
  lane.port.on('message', ({ paths, ends, slot }: BatchMessage) => {
    try {
      writeBatch(paths, ends, new Uint8Array(lane.ring, slot * lane.slotBytes, lane.slotBytes));
    } finally {
      Atomics.add(lane.counts, 1, 1);
      Atomics.notify(lane.counts, 1);
    }
  });
}

// The main thread waits for this before it sends anything (ThreadedDirectoryWriter.started).
Atomics.store(done, 1, 1);
Atomics.notify(done, 1);

function writeBatch(paths: string[], ends: number[], data: Uint8Array): void {
  if (failed) return;
  for (let i = 0; i < paths.length; i++) {
    try {
      placer.place(paths[i]!, data.subarray(i === 0 ? 0 : ends[i - 1], ends[i]));
    } catch (error) {
      // Reported once; the rest of the build's writes are dropped and the build fails.
      failed = true;
      port.postMessage({ error: `cannot write ${paths[i]}: ${(error as Error).message}` });
      return;
    }
  }
}
