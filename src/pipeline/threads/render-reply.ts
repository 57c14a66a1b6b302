import type { RenderReply, RenderWorkerData } from './render-pool.js';

/**
 * Sends `message` to the build thread and wakes it (it waits on `signal`, render-pool.ts): every
 * thread that serves the render pool answers this way. A module of its own, so the write thread
 * can answer before (or without) loading render-service.ts and the formats.
 */
export function replyTo({ port, signal }: Pick<RenderWorkerData, 'port' | 'signal'>, message: RenderReply): void {
  port.postMessage(message);
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
}
