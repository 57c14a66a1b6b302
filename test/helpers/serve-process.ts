import type { ChildProcess } from 'node:child_process';
import { cliAsync } from './cli.js';
import { cleanUpAfterTest } from './temp-dir.js';

/**
 * `vidfeeds serve` from the built command line, on a port it chooses itself (`--port 0`): its first
 * line names the address, so no other process can hold the port meanwhile, and the test talks to
 * this server or fails naming why it did not start.
 */

export interface ServeProcess {
  port: number;
  child: ChildProcess;
  /** Its stderr so far, by line. */
  log: string[];
  /** Resolves with its exit code once it has exited. */
  exited: Promise<number | null>;
}

/** Starts serve with `args` (the port is added); stopped when the current test or file ends, if the caller has not. */
export async function startServe(args: readonly string[], options: { cwd?: string } = {}): Promise<ServeProcess> {
  const child = cliAsync(['serve', ...args, '--port', '0'], options);
  try {
    cleanUpAfterTest(() => child.kill('SIGKILL'));
  } catch {
    // Outside a test (a beforeAll): the caller stops it.
  }
  return serving(child);
}

/**
 * A started `vidfeeds serve --port 0` (this clone's, or an installed one) once its first line
 * names its port; fails with what it printed if it exits or names none within 30 s.
 */
export async function serving(child: ChildProcess): Promise<ServeProcess> {
  const log: string[] = [];
  let pending = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`vidfeeds serve named no address within 30 s:\n${log.join('\n')}${pending}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      log.push(...lines);
      const address = /serving .* at http:\/\/127\.0\.0\.1:(\d+)\//.exec(log.join('\n'));
      if (address !== null) {
        clearTimeout(timer);
        resolve(Number(address[1]));
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`vidfeeds serve exited ${code} before serving:\n${log.join('\n')}${pending}`));
    });
  });
  return { port, child, log, exited };
}
