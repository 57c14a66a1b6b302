import { parentPort, receiveMessageOnPort, threadId, workerData, type MessagePort } from 'node:worker_threads';
import { FilePlacer, resolveInside } from '../write/output-writer.js';
import type { RenderWorkerData } from './render-pool.js';
import { replyTo } from './render-reply.js';
import type { BatchMessage, LaneMessage, RenderMessage } from './write-pool.js';

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
/** The first write that failed, reported to the build thread; the rest of the build's writes are dropped. */
let failed: string | null = null;
/** Milliseconds spent writing batches, told to the build in done[2] (ThreadedDirectoryWriter.spareTime). */
let busy = 0;

parentPort!.on('message', onMessage);

function onMessage(message: BatchMessage | LaneMessage | RenderMessage): void {
  if ('lane' in message) return openLane(message);
  if ('render' in message) return void serveRenders(message.render as RenderWorkerData);
  const { paths, ends, slot, removed } = message;
  // A batch is always counted done, or the main thread would wait for it forever.
  try {
    if (removed) placer.dirs.forget();
    writeBatch(paths, ends, new Uint8Array(ring, slot * slotBytes, slotBytes));
  } finally {
    Atomics.add(done, 0, 1);
    Atomics.notify(done, 0);
  }
}

/** Handles the messages waiting from the build thread now, in order (its batches, while this thread renders). */
function drain(): void {
  for (let next = receiveMessageOnPort(parentPort!); next !== undefined; next = receiveMessageOnPort(parentPort!)) {
    onMessage(next.message as BatchMessage | LaneMessage | RenderMessage);
  }
}

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

/**
 * Reads and renders users for the build's render pool besides writing (ThreadedDirectoryWriter.
 * lendThread): render-service.ts, loaded when first asked, so a build that never asks loads none
 * of the formats here. Their files are placed by this thread's placer, between the batches.
 */
async function serveRenders(data: RenderWorkerData): Promise<void> {
  try {
    const service = await import('./render-service.js');
    service.serveRenders(data, {
      place: (path, body) => {
        if (failed !== null) throw new Error(`an earlier write failed (${failed})`);
        placer.place(resolveInside(root, path), body);
      },
      send: () => {},
      between: drain,
    });
  } catch (error) {
    replyTo(data, { refused: `the write thread could not render: ${(error as Error).message}` });
  }
}

// The main thread waits for this before it sends anything (ThreadedDirectoryWriter.started).
Atomics.store(done, 1, 1);
Atomics.notify(done, 1);

function writeBatch(paths: string[], ends: number[], data: Uint8Array): void {
  const started = performance.now();
  try {
    placeAll(paths, ends, data);
  } finally {
    busy += performance.now() - started;
    Atomics.store(done, 2, Math.round(busy));
  }
}

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
