import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { postgresMissing, startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp-dir.js';
import type { SyncSite } from './sync-scenario.js';
import { openSource } from '../../src/sync/open-source.js';
import { SourceStopped, SourceUnavailableError } from '../../src/sync/sync-errors.js';
import { databaseBytes, expectEnded, expectQueryEndedOnServer, expectStoppedAtOnce, mapUsers, READ_TIMEOUT_SECONDS, slowSite, startSync, waitFor, type RunningSync } from './fault-scenario.js';

/**
 * A PostgreSQL source failing under a running sync: its backend terminated while the rows stream
 * or as soon as it connects, the backend frozen past the read timeout, a host without an address.
 * Each sync ends by itself with its exit code and a message, and vidfeeds's database is byte for
 * byte as before. The mapping sleeps a little per row, so that its read lasts long enough.
 */

const missing = postgresMissing();

const USERS = 'SELECT id, login AS username, 1238587200 AS created_at, changed AS updated_at FROM members';
const SLOW_USERS = `${USERS} WHERE pg_sleep(0.002)::text = ''`;
/** The members after 30 s, as a query over a large join may take. */
const SLEEPING_USERS = `${USERS} CROSS JOIN (SELECT pg_sleep(30)) AS pause`;

describe.skipIf(missing !== null)('vidfeeds sync when the PostgreSQL source fails', () => {
  let server: RunningPostgres;
  let site: SyncSite;
  let before: string;
  const temp = tempDir('vidfeeds-sync-postgres-faults-');

  /** The process id of the sync's backend once it reads the members (or, with `anyQuery`, once it has connected). */
  const syncBackend = (sync: RunningSync, anyQuery = false) =>
    waitFor('the sync reading the members', sync, async () => {
      const rows = await server.admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE usename = 'site'${anyQuery ? '' : " AND state = 'active' AND query LIKE '%pg_sleep(0.002)%'"}`,
      );
      return rows.rows[0]?.pid;
    });

  /** The process id of the backend of the source's connection while its query sleeps, if there is one. */
  const sleeping = async () => {
    const rows = await server.admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE usename = 'site' AND query LIKE '%pg_sleep(30)%'");
    return rows.rows[0]?.pid;
  };

  beforeAll(async () => {
    server = await startPostgres();
    await server.admin.query(
      'CREATE TABLE members (id int PRIMARY KEY, login text NOT NULL, changed int NOT NULL); ' +
        "INSERT INTO members SELECT n, 'member' || n, 1238587200 FROM generate_series(1, 2000) AS n",
    );
    site = await slowSite(temp.dir, server.url, USERS, SLOW_USERS, () => server.admin.query('UPDATE members SET changed = changed + 1 WHERE id % 10 = 0'));
  });

  beforeEach(() => {
    before = databaseBytes(site.db);
  });

  afterEach(async () => {
    await server.admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'site'");
  });

  afterAll(async () => {
    await server?.stop();
    temp.cleanup();
  });

  it('ends with 75 when the backend is terminated while the rows stream', async () => {
    const sync = startSync(site, server.url);
    const pid = await syncBackend(sync);
    await new Promise((r) => setTimeout(r, 300));
    await server.admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await expectEnded(sync, 75, /the source database \(postgres:\/\/site:\*\*\*@127\.0\.0\.1:\d+\/site\) stopped answering: .*; nothing was written; try again later/, site.db, before);
  });

  it('ends with 75 at once, not after sync.readTimeoutSeconds, when the backend is terminated while the rows stream', async () => {
    // A read timeout far longer than the sync may take to end: waiting for the dead connection
    // to close the cursor would wait it out.
    mapUsers(site, SLOW_USERS, { readTimeoutSeconds: 30 });
    try {
      const sync = startSync(site, server.url);
      const pid = await syncBackend(sync);
      await new Promise((r) => setTimeout(r, 300));
      const terminated = Date.now();
      await server.admin.query('SELECT pg_terminate_backend($1)', [pid]);
      // The server's last word, or the reset that can overtake it when the backend closes a
      // socket holding bytes it has not read (met on a read, or on the cursor's next FETCH):
      // all of them the connection gone.
      await expectEnded(sync, 75, /stopped answering: (terminating connection due to administrator command|read ECONNRESET|write ECONNRESET|write EPIPE); nothing was written/, site.db, before);
      expect(Date.now() - terminated).toBeLessThan(5000);
    } finally {
      mapUsers(site, SLOW_USERS);
    }
  });

  it('fails the next query at once when the connection was dropped between queries', async () => {
    const source = await openSource(server.url, { readTimeoutSeconds: 30 });
    try {
      expect(await source.columnsOf(USERS)).toContain('username');
      await server.admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'vidfeeds sync'");
      // The sync busy writing the last table's rows, as it is between queries: the server's
      // goodbye waits unread while the next query is sent on the dead connection.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
      const asked = Date.now();
      const read = (async () => {
        for await (const batch of source.rows(USERS, ['id'])) void batch;
      })();
      await expect(read).rejects.toThrow(SourceUnavailableError);
      await expect(read).rejects.toThrow(/the source database \(postgres:\/\/site:\*\*\*@127\.0\.0\.1:\d+\/site\) stopped answering: (terminating connection due to administrator command|Connection terminated unexpectedly|write EPIPE|read ECONNRESET)/);
      await expect(source.max(USERS, 'changed')).rejects.toThrow(SourceUnavailableError);
      expect(Date.now() - asked).toBeLessThan(5000);
    } finally {
      const closing = Date.now();
      await source.close();
      // A close that waited on the dead connection would take the 30 s read timeout; 3 s leaves a
      // loaded CI machine its room.
      expect(Date.now() - closing).toBeLessThan(3000);
    }
  });

  it.each(['SIGINT', 'SIGTERM'] as const)('hears %s at once while the source is slow to answer: 130/143, nothing written', async (signal) => {
    mapUsers(site, SLEEPING_USERS, { readTimeoutSeconds: 60 });
    try {
      await expectStoppedAtOnce(startSync(site, server.url), signal, sleeping, site.db, before);
      // Asked to end the query from a connection of its own: left alone, the server would run it to its end.
      await expectQueryEndedOnServer(sleeping);
    } finally {
      mapUsers(site, SLOW_USERS);
    }
  });

  it('drops the connection at once when the sync is asked to stop during a query', async () => {
    // The backend then checks its client every 100 ms while the query runs, and ends when it is gone.
    await server.admin.query("ALTER ROLE site SET client_connection_check_interval = '100ms'");
    const stop = new AbortController();
    const source = await openSource(server.url, { readTimeoutSeconds: 60, stop: stop.signal });
    try {
      const read = (async () => {
        for await (const batch of source.rows(SLEEPING_USERS, ['id'])) void batch;
      })();
      read.catch(() => undefined);
      let pid: number | undefined;
      for (let waited = 0; (pid = await sleeping()) === undefined; waited += 20) {
        if (waited > 30_000) throw new Error('the query never ran');
        await new Promise((r) => setTimeout(r, 20));
      }
      const asked = Date.now();
      stop.abort();
      await expect(read).rejects.toThrow(SourceStopped);
      // Against the query's 60 s read timeout and the server's sleep: a loaded machine's room, not a benchmark.
      expect(Date.now() - asked).toBeLessThan(3000);
      const gone = async () => (await server.admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0;
      for (let waited = 0; !(await gone()); waited += 20) {
        if (waited > 5000) throw new Error('the backend still has its client 5 s after the stop: the connection was not closed');
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await source.close();
      await server.admin.query('ALTER ROLE site RESET client_connection_check_interval');
    }
  });

  it('ends with 75 when the backend is terminated as soon as it connects', async () => {
    const sync = startSync(site, server.url);
    const pid = await syncBackend(sync, true);
    await server.admin.query('SELECT pg_terminate_backend($1)', [pid]);
    await expectEnded(sync, 75, /the source database .*(stopped answering|cannot be read)/, site.db, before);
  });

  it('ends with 75 when the backend stays frozen past sync.readTimeoutSeconds', async () => {
    const sync = startSync(site, server.url);
    const pid = await syncBackend(sync);
    process.kill(pid, 'SIGSTOP');
    try {
      await expectEnded(sync, 75, new RegExp(`did not answer for ${READ_TIMEOUT_SECONDS} s \\(sync\\.readTimeoutSeconds\\)`), site.db, before);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  });

  it('ends with 2 when the URL asks for TLS (sslmode=require) and the server has none: never in clear text instead', async () => {
    const sync = startSync(site, `${server.url}?sslmode=require`);
    await expectEnded(sync, 2, /PostgreSQL at postgres:\/\/site:\*\*\*@127\.0\.0\.1:\d+\/site\?sslmode=require\) cannot be read: the server does not offer TLS, which the URL asks for \(sslmode\).*fix the URL/, site.db, before);
  });

  it('ends with 2 on a host without an address: trying again would not help', async () => {
    const sync = startSync(site, 'postgres://site:secret@no-such-host.invalid/site');
    await expectEnded(sync, 2, /PostgreSQL at postgres:\/\/site:\*\*\*@no-such-host\.invalid\/site\) cannot be read: .*ENOTFOUND.*fix the URL/, site.db, before);
  });
});
