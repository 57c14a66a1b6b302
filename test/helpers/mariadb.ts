import mysql from 'mysql2/promise';
import { join } from 'node:path';
import { freePort } from './http.js';
import { missingPrograms } from './programs.js';
import { pidFromFile, retryUntil, runAsServerUser, serverDir, spawnAsServerUser, startOnFreePort, stopServer } from './server-dir.js';

/**
 * A MariaDB server of Debian's `mariadb-server`, started for a test in a temporary directory on a
 * free port (as `nobody` when the tests run as root), with a database `site` and a user `site`
 * (password `secret`) allowed to read it.
 */


const MARIADBD = '/usr/sbin/mariadbd';

export interface RunningMariadb {
  port: number;
  /** The URL `vidfeeds sync` reads from, as the `site` user. */
  url: string;
  /** The server's Unix socket. */
  socket: string;
  /** A connection as root, to create and change the site's tables (a new one after `restart`). */
  admin: mysql.Connection;
  /** The server's process id, for a test that freezes it (SIGSTOP); undefined once it stopped. */
  pid(): number | undefined;
  /** Stops the server (SIGTERM, as a service manager does) and starts it again on the same port and data. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** The message of a skipped test when MariaDB is not installed, or null. */
export function mariadbMissing(): string | null {
  return missingPrograms('the MariaDB sync tests', { [MARIADBD]: 'mariadb-server', 'mariadb-install-db': 'mariadb-server' });
}

export async function startMariadb(): Promise<RunningMariadb> {
  const dir = serverDir('vidfeeds-mariadb-');
  const data = join(dir, 'data');
  const pidFile = join(dir, 'mariadbd.pid');
  runAsServerUser('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, '--auth-root-authentication-method=normal', '--skip-test-db']);
  const log = join(dir, 'error.log');
  const argsOn = (port: number) => [
    '--no-defaults', `--datadir=${data}`, `--socket=${join(dir, 'mariadbd.sock')}`, `--port=${port}`, '--bind-address=127.0.0.1',
    `--pid-file=${pidFile}`, '--skip-log-bin', '--innodb-buffer-pool-size=64M', '--innodb-flush-log-at-trx-commit=0', '--skip-name-resolve',
    `--log-error=${log}`,
  ];
  const stop = () => stopServer(pidFromFile(pidFile), 'SIGTERM', dir);
  /** Root's connection to this test's server: another test's could have taken the port before it bound it. */
  const connectAdmin = async (port: number) => {
    const admin = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root', multipleStatements: true, database: 'mysql', connectTimeout: 5000 });
    const [rows] = await admin.query('SELECT @@pid_file AS pidFile');
    if ((rows as Array<{ pidFile: string }>)[0]?.pidFile !== pidFile) {
      await admin.end().catch(() => undefined);
      throw new Error(`another MariaDB server answers on port ${port}`);
    }
    return admin;
  };
  process.once('exit', () => {
    const pid = pidFromFile(pidFile);
    if (pid !== undefined) process.kill(pid, 'SIGKILL');
  });
  try {
    const { port, connection: admin } = await startOnFreePort('MariaDB', freePort, (p) => spawnAsServerUser(MARIADBD, argsOn(p)), connectAdmin, log);
    await admin.query(
      "CREATE DATABASE site CHARACTER SET utf8mb3; CREATE USER 'site'@'%' IDENTIFIED BY 'secret'; GRANT SELECT ON site.* TO 'site'@'%'; USE site",
    );
    const server: RunningMariadb = {
      port,
      url: `mysql://site:secret@127.0.0.1:${port}/site`,
      socket: join(dir, 'mariadbd.sock'),
      admin,
      pid: () => pidFromFile(pidFile),
      async restart() {
        await server.admin.end().catch(() => undefined);
        await stopServer(pidFromFile(pidFile), 'SIGTERM', undefined);
        spawnAsServerUser(MARIADBD, argsOn(port));
        server.admin = await retryUntil('MariaDB did not start again', () => connectAdmin(port));
        await server.admin.query('USE site');
      },
      async stop() {
        await server.admin.end().catch(() => undefined);
        await stop();
      },
    };
    return server;
  } catch (error) {
    await stop();
    throw error;
  }
}
