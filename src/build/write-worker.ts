import { closeSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parentPort, threadId, workerData, type MessagePort } from 'node:worker_threads';
import { STAGING_DIR } from './output-writer.js';

/**
 * The worker of ThreadedDirectoryWriter (write-pool.ts): writes each file of a batch into the
 * staging folder and renames it into place, as DirectoryWriter does, then counts the batch done.
 * Paths arrive resolved and checked by the main thread.
 */
const { root, done, port } = workerData as { root: string; done: Int32Array; port: MessagePort };
const staging = join(root, STAGING_DIR);
let counter = 0;
let lastDir = '';
let failed = false;

parentPort!.on('message', ({ paths, bodies }: { paths: string[]; bodies: Uint8Array[] }) => {
  // A batch is always counted done, or the main thread would wait for it forever.
  try {
    writeBatch(paths, bodies);
  } finally {
    Atomics.add(done, 0, 1);
    Atomics.notify(done, 0);
  }
});

// The main thread waits for this before it sends anything (ThreadedDirectoryWriter.started).
Atomics.store(done, 1, 1);
Atomics.notify(done, 1);

function writeBatch(paths: string[], bodies: Uint8Array[]): void {
  if (!failed) {
    for (let i = 0; i < paths.length; i++) {
      const full = paths[i]!;
      try {
        const dir = dirname(full);
        if (dir !== lastDir) {
          mkdirSync(dir, { recursive: true });
          lastDir = dir;
        }
        const body = bodies[i]!;
        const temp = join(staging, `${process.pid}-w${threadId}-${counter++}`);
        const fd = openSync(temp, 'w', 0o644);
        try {
          let offset = 0;
          while (offset < body.length) offset += writeSync(fd, body, offset, body.length - offset);
        } finally {
          closeSync(fd);
        }
        renameSync(temp, full);
      } catch (error) {
        // Reported once; the rest of the build's writes are dropped and the build fails.
        failed = true;
        port.postMessage({ error: `cannot write ${full}: ${(error as Error).message}` });
        break;
      }
    }
  }
}
