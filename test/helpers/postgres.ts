import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './http.js';
import { pidFromFile, runAsServerUser, serverDir, spawnAsServerUser, startOnFreePort, stopServer } from './server-dir.js';

/**
 * A PostgreSQL server of Debian's `postgresql`, started for a test in a temporary directory on a
 * free port (as `nobody` when the tests run as root), with a database `site` and a user `site`
 * (password `secret`, checked with SCRAM over TCP) allowed to read it.
 */

const BIN = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin'].find((dir) => existsSync(join(dir, 'postgres')));

export interface RunningPostgres {
  port: number;
  url: string;
  /** A connection as the superuser, to create and change the site's tables. */
  admin: pg.Client;
  stop(): Promise<void>;
}

/** The message of a skipped test when PostgreSQL is not installed, or null. */
export function postgresMissing(): string | null {
  if (BIN !== undefined) return null;
  const message = 'skipped the PostgreSQL sync tests: /usr/lib/postgresql/*/bin/postgres not installed (apt-get install postgresql; .ci/run installs it)';
  console.warn(message);
  return message;
}

export async function startPostgres(): Promise<RunningPostgres> {
  const dir = serverDir('vidfeeds-postgres-');
  const data = join(dir, 'data');
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, 'secret\n', { mode: 0o644 });
  runAsServerUser(join(BIN!, 'initdb'), ['-D', data, '-U', 'postgres', '--auth-local=trust', '--auth-host=scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--no-sync', '--locale=C.UTF-8']);
  const log = join(dir, 'postgres.log');
  const pidFile = join(data, 'postmaster.pid');
  // SIGINT: PostgreSQL's fast shutdown.
  const stop = () => stopServer(pidFromFile(pidFile), 'SIGINT', dir);
  process.once('exit', () => {
    const pid = pidFromFile(pidFile);
    if (pid !== undefined) process.kill(pid, 'SIGKILL');
  });
  try {
    const { port, connection: admin } = await startOnFreePort(
      'PostgreSQL',
      freePort,
      (p) => spawnAsServerUser(join(BIN!, 'postgres'), ['-D', data, '-p', String(p), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'shared_buffers=32MB'], log),
      async (p) => {
        const client = new pg.Client({ host: '127.0.0.1', port: p, user: 'postgres', password: 'secret', database: 'postgres', connectionTimeoutMillis: 5000 });
        client.on('error', () => undefined);
        await client.connect();
        // Another test's server could have taken the port before this one bound it.
        const { rows } = await client.query<{ data_directory: string }>('SHOW data_directory');
        if (rows[0]?.data_directory !== data) {
          await client.end().catch(() => undefined);
          throw new Error(`another PostgreSQL server answers on port ${p}`);
        }
        return client;
      },
      log,
    );
    await admin.query("CREATE USER site PASSWORD 'secret'");
    await admin.query('CREATE DATABASE site OWNER postgres');
    await admin.end();
    const site = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password: 'secret', database: 'site' });
    site.on('error', () => undefined);
    await site.connect();
    await site.query('GRANT USAGE ON SCHEMA public TO site; ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO site');
    return {
      port,
      url: `postgres://site:secret@127.0.0.1:${port}/site`,
      admin: site,
      async stop() {
        await site.end().catch(() => undefined);
        await stop();
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
