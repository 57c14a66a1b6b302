import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

/** Starts the server in the foreground; its output goes to `log`. */
export function spawnAsServerUser(program: string, args: string[]): ChildProcess {
  return spawn(program, args, { stdio: 'ignore', cwd: tmpdir(), ...SERVER_USER });
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

export async function retryUntil<T>(what: string, attempt: () => Promise<T>, deadlineMs = 60_000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(error as Error).message}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
