import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';

/**
 * The database servers the sync bench reads from: Debian's MariaDB and PostgreSQL, started in a
 * temporary directory on a free port (as nobody when run as root, since both refuse root), with
 * a database `site` that root (MariaDB) or postgres (PostgreSQL) may use without a password.
 */

export interface BenchServer {
  kind: 'mariadb' | 'postgres';
  /** The URL `vidfeeds sync --from` takes. */
  url: string;
  stop(): void;
}

const ROOT = process.getuid?.() === 0;
const POSTGRES_BIN = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin'].find((dir) => existsSync(join(dir, 'postgres')));

export function serverAvailable(kind: 'mariadb' | 'postgres'): boolean {
  return kind === 'mariadb' ? existsSync('/usr/sbin/mariadbd') : POSTGRES_BIN !== undefined;
}

export async function startBenchServer(kind: 'mariadb' | 'postgres'): Promise<BenchServer> {
  const dir = mkdtempSync(join(tmpdir(), `vidfeeds-bench-${kind}-`));
  if (ROOT) chownSync(dir, 65534, 65534);
  const port = await freePort();
  const run = (program: string, args: string[]) => {
    const result = spawnSync(ROOT ? 'runuser' : program, ROOT ? ['-u', 'nobody', '--', program, ...args] : args, { encoding: 'utf8', cwd: tmpdir() });
    if (result.status !== 0) throw new Error(`${program} failed: ${result.stdout}${result.stderr}`);
  };
  const start = (program: string, args: string[]) => spawn(ROOT ? 'runuser' : program, ROOT ? ['-u', 'nobody', '--', program, ...args] : args, { stdio: 'ignore', cwd: tmpdir() }).unref();
  let pidFile: string;
  let url: string;
  if (kind === 'mariadb') {
    const data = join(dir, 'data');
    pidFile = join(dir, 'mariadbd.pid');
    run('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, '--auth-root-authentication-method=normal', '--skip-test-db']);
    start('/usr/sbin/mariadbd', [
      '--no-defaults', `--datadir=${data}`, `--socket=${join(dir, 'sock')}`, `--port=${port}`, '--bind-address=127.0.0.1', `--pid-file=${pidFile}`,
      '--skip-log-bin', '--innodb-buffer-pool-size=512M', '--innodb-flush-log-at-trx-commit=0', '--skip-name-resolve', `--log-error=${join(dir, 'error.log')}`,
    ]);
    url = `mysql://root@127.0.0.1:${port}/site`;
  } else {
    const data = join(dir, 'data');
    pidFile = join(data, 'postmaster.pid');
    run(join(POSTGRES_BIN!, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--locale=C.UTF-8']);
    start(join(POSTGRES_BIN!, 'postgres'), ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'shared_buffers=256MB']);
    url = `postgres://postgres@127.0.0.1:${port}/site`;
  }
  const stop = () => {
    const pid = readPid(pidFile);
    if (pid !== undefined) {
      try {
        process.kill(pid, kind === 'mariadb' ? 'SIGTERM' : 'SIGINT');
      } catch {
        // already gone
      }
      for (let i = 0; i < 300 && alive(pid); i++) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  return { kind, url, stop };
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}


