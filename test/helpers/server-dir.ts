import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * What the database servers of the sync tests share: a temporary directory the server may write,
 * and running its programs as `nobody` when the tests run as root (CI), since MariaDB and
 * PostgreSQL refuse to run as root.
 */

const ROOT = process.getuid?.() === 0;

/** A fresh directory the server's user owns. */
export function serverDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (ROOT) chownSync(dir, 65534, 65534);
  return dir;
}

/**
 * Runs as `nobody` (uid and gid 65534) when the tests run as root. Node sets the ids itself, so the
 * server is the test's own child: `runuser` would stand between them, stop itself when a test
 * freezes the server (SIGSTOP) and, still stopped, never reap it, so a server that exits later
 * would stay a zombie that looks alive.
 */
const SERVER_USER = ROOT ? { uid: 65534, gid: 65534 } : {};

/** Runs a setup program to its end; throws with its output when it fails. */
export function runAsServerUser(program: string, args: string[]): void {
  const result = spawnSync(program, args, { encoding: 'utf8', cwd: tmpdir(), ...SERVER_USER });
  if (result.status !== 0) throw new Error(`${program} failed (${result.status}): ${result.stdout}${result.stderr}${result.error?.message ?? ''}`);
}

/** Starts the server in the foreground; its output goes to the file `output` when given. */
export function spawnAsServerUser(program: string, args: string[], output?: string): ChildProcess {
  if (output === undefined) return spawn(program, args, { stdio: 'ignore', cwd: tmpdir(), ...SERVER_USER });
  const fd = openSync(output, 'a');
  try {
    return spawn(program, args, { stdio: ['ignore', fd, fd], cwd: tmpdir(), ...SERVER_USER });
  } finally {
    closeSync(fd);
  }
}

/** How many times a server is started on another free port when the one it was given was taken. */
const PORT_TRIES = 3;

/**
 * Starts a server on a free port and connects to it. The port is free when `freePort` asks, not
 * always when the server binds it (another test's server can take it in between): a server that
 * exits saying so is started again on another port. A server that exits for another reason, or
 * does not answer within a minute, fails the start at once with the last lines of its log.
 */
export async function startOnFreePort<T>(
  what: string,
  freePort: () => Promise<number>,
  start: (port: number) => ChildProcess,
  connect: (port: number) => Promise<T>,
  log: string,
): Promise<{ port: number; connection: T }> {
  for (let tries = 1; ; tries++) {
    const port = await freePort();
    const child = start(port);
    let exited: string | undefined;
    child.once('exit', (code, signal) => (exited = `it exited (${signal ?? `code ${code}`})`));
    try {
      return { port, connection: await retryUntil(`${what} did not start on port ${port}`, () => connect(port), 60_000, () => exited) };
    } catch (error) {
      const tail = logTail(log);
      if (exited !== undefined && /address already in use/i.test(tail) && tries < PORT_TRIES) continue;
      throw new Error(`${(error as Error).message}; the end of ${log}:\n${tail}`);
    }
  }
}

/** The last lines of a server's log, or why there are none. */
function logTail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch (error) {
    return `(no log: ${(error as Error).message})`;
  }
}

/** The server's own pid, from its pid file. */
export function pidFromFile(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops the server by its pid (its pid file's), waits for it to go, and removes its directory. */
export async function stopServer(pid: number | undefined, signal: NodeJS.Signals, dir: string | undefined): Promise<void> {
  if (pid !== undefined && alive(pid)) {
    process.kill(pid, signal);
    for (let i = 0; i < 300 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}

/** Tries `attempt` every 200 ms until it succeeds; fails after `deadlineMs`, or at once when `gone` says why it cannot succeed. */
export async function retryUntil<T>(what: string, attempt: () => Promise<T>, deadlineMs = 60_000, gone: () => string | undefined = () => undefined): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const why = gone();
    if (why !== undefined) throw new Error(`${what}: ${why}`);
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(error as Error).message}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
