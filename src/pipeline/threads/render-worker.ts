import { threadId, workerData } from 'node:worker_threads';
import { FilePlacer, resolveInside } from '../write/output-writer.js';
import type { RenderWorkerData } from './render-pool.js';
import { replyTo } from './render-reply.js';
import { serveRenders, type FileSink } from './render-service.js';
import { LaneWriter } from './write-pool.js';

/**
 * A render thread of RenderPool (render-pool.ts), serving it as render-service.ts does. The files
 * it writes (a build into an empty directory) go through its lane into the build's write thread
 * when the build gave one, else it places them itself (FilePlacer: beside, then renamed into place).
 */
const data = workerData as RenderWorkerData;

function sinkOf(writeTo: NonNullable<RenderWorkerData['writeTo']>): FileSink {
  const prefix = `${process.pid}-r${threadId}`;
  if (writeTo.lane != null) {
    const lane = new LaneWriter(writeTo.lane, prefix);
    return { place: (path, body) => lane.write(path, body), send: () => lane.send() };
  }
  const placer = new FilePlacer(writeTo.root, prefix);
  return { place: (path, body) => placer.place(resolveInside(writeTo.root, path), body), send: () => {} };
}

try {
  serveRenders(data, data.writeTo === null ? null : sinkOf(data.writeTo));
} catch (error) {
  replyTo(data, { refused: `the render thread could not start: ${(error as Error).message}` });
}
