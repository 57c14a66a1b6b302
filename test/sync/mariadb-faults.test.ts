import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { BIN } from '../helpers/cli.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mariadbMissing, startMariadb, type RunningMariadb } from '../helpers/mariadb.js';
import { tempDir } from '../helpers/temp-dir.js';
import type { SyncSite } from './sync-scenario.js';
import { databaseBytes, expectEnded, expectQueryEndedOnServer, expectStoppedAtOnce, mapUsers, READ_TIMEOUT_SECONDS, slowSite, startSync, waitFor, type RunningSync } from './fault-scenario.js';

/**
 * A MariaDB source failing under a running sync: its connection killed at several points, the
 * server frozen past the read timeout or restarted, a host without an address, a connection reset.
 * Each sync ends by itself with its exit code and a message, and vidfeeds's database is byte for
 * byte as before. The mapping sleeps a little per row, so that its read lasts long enough to be
 * broken while it runs.
 */

const missing = mariadbMissing();

const USERS = 'SELECT id, login AS username, 1238587200 AS created_at, changed AS updated_at FROM members';
const SLOW_USERS = `${USERS} WHERE SLEEP(0.002) = 0`;
/** The members through a view that takes 30 s to answer, as a view over a large join may. */
const SLEEPING_USERS = USERS.replace('FROM members', 'FROM sleepy_members');

describe.skipIf(missing !== null)('vidfeeds sync when the MariaDB source fails', () => {
  let server: RunningMariadb;
  let site: SyncSite;
  let before: string;
  const temp = tempDir('vidfeeds-sync-mariadb-faults-');

  /** The id of the sync's connection while it waits for the view that sleeps. */
  const sleeping = async () => {
    const [rows] = await server.admin.query("SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER = 'site' AND INFO LIKE '%sleepy_members%'");
    return (rows as Array<{ id: number }>)[0]?.id;
  };

  /** The id of the sync's connection once its query of the members runs (or, with `anyQuery`, once it has connected). */
  const syncConnection = (sync: RunningSync, anyQuery = false) =>
    waitFor('the sync reading the members', sync, async () => {
      const [rows] = await server.admin.query(
        `SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER = 'site'${anyQuery ? '' : " AND INFO LIKE '%SLEEP(0.002)%'"}`,
      );
      return (rows as Array<{ id: number }>)[0]?.id;
    });

  beforeAll(async () => {
    server = await startMariadb();
    await server.admin.query(
      'CREATE TABLE members (id INT PRIMARY KEY, login VARCHAR(40) NOT NULL, changed INT NOT NULL); ' +
        "INSERT INTO members SELECT seq, CONCAT('member', seq), 1238587200 FROM seq_1_to_2000; " +
        'CREATE VIEW sleepy_members AS SELECT members.* FROM members CROSS JOIN (SELECT SLEEP(30) AS pause) AS pause',
    );
    site = await slowSite(temp.dir, server.url, USERS, SLOW_USERS, () => server.admin.query('UPDATE members SET changed = changed + 1 WHERE id % 10 = 0'));
  });

  beforeEach(() => {
    before = databaseBytes(site.db);
  });

  // A query whose client went away runs on in the server until it next writes: it must not be taken for the next test's.
  afterEach(async () => {
    const [rows] = await server.admin.query("SELECT ID AS id FROM information_schema.PROCESSLIST WHERE USER = 'site'");
    for (const { id } of rows as Array<{ id: number }>) await server.admin.query(`KILL CONNECTION ${id}`).catch(() => undefined);
  });

  afterAll(async () => {
    await server?.stop();
    temp.cleanup();
  });

  it('ends with 75 when the connection is killed while the rows stream', async () => {
    const sync = startSync(site, server.url);
    const id = await syncConnection(sync);
    await new Promise((r) => setTimeout(r, 300));
    await server.admin.query(`KILL CONNECTION ${id}`);
    await expectEnded(sync, 75, /the source database \(127\.0\.0\.1:\d+\) stopped answering: .*; nothing was written; try again later/, site.db, before);
  });

  it('ends with 75 when its query is killed', async () => {
    const sync = startSync(site, server.url);
    const id = await syncConnection(sync);
    await server.admin.query(`KILL QUERY ${id}`);
    await expectEnded(sync, 75, /stopped answering: Query execution was interrupted/, site.db, before);
  });

  it('ends with 75 when the connection is killed as soon as it is made', async () => {
    const sync = startSync(site, server.url);
    const id = await syncConnection(sync, true);
    await server.admin.query(`KILL CONNECTION ${id}`);
    await expectEnded(sync, 75, /the source database .*(stopped answering|cannot be read)/, site.db, before);
  });

  it('ends with 75 when the server stays frozen past sync.readTimeoutSeconds', async () => {
    const sync = startSync(site, server.url);
    await syncConnection(sync);
    const pid = server.pid()!;
    process.kill(pid, 'SIGSTOP');
    try {
      await expectEnded(sync, 75, new RegExp(`did not answer for ${READ_TIMEOUT_SECONDS} s \\(sync\\.readTimeoutSeconds\\)`), site.db, before);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
  });

  it('ends with 75 when the server restarts under it, and the next sync completes', async () => {
    const sync = startSync(site, server.url);
    await syncConnection(sync);
    await server.restart();
    await expectEnded(sync, 75, /the source database .*stopped answering/, site.db, before);
    mapUsers(site, USERS);
    const again = site.sync();
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/made 200 changes \(users ~200\)/);
    mapUsers(site, SLOW_USERS);
  });

  it.each(['SIGINT', 'SIGTERM'] as const)('hears %s at once while the source is slow to answer: 130/143, nothing written', async (signal) => {
    // The read timeout far longer than the sync may take to end.
    mapUsers(site, SLEEPING_USERS, { readTimeoutSeconds: 60 });
    try {
      await expectStoppedAtOnce(startSync(site, server.url), signal, sleeping, site.db, before);
      // Asked to end the query from a connection of its own: left alone, the server would run it to its end.
      await expectQueryEndedOnServer(sleeping);
    } finally {
      mapUsers(site, SLOW_USERS);
    }
  });

  it('ends with 2 on a host without an address: trying again would not help', async () => {
    const sync = startSync(site, 'mysql://site:secret@no-such-host.invalid/site');
    await expectEnded(sync, 2, /MySQL\/MariaDB at no-such-host\.invalid:3306.*cannot be read: .*ENOTFOUND.*fix the URL/, site.db, before);
  });

  it('ends with 2 when the URL asks for TLS (?ssl=true) and the server has none: never in clear text instead', async () => {
    const sync = startSync(site, `${server.url}?ssl=true`);
    await expectEnded(sync, 2, /MySQL\/MariaDB at 127\.0\.0\.1:\d+.*cannot be read: the server does not offer TLS, which the URL asks for \(\?ssl=\).*HANDSHAKE_NO_SSL_SUPPORT.*fix the URL/, site.db, before);
  });

  it('ends with 75 when every connection is reset', async () => {
    const resetting: Server = createServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = resetting.address() as { port: number };
      const sync = startSync(site, `mysql://site:secret@127.0.0.1:${port}/site`);
      await expectEnded(sync, 75, /cannot be read: .*(ECONNRESET|Connection lost)/, site.db, before);
    } finally {
      resetting.close();
    }
  });

  it('watch --sync-every reports a frozen source and goes on syncing once it answers again', async () => {
    mapUsers(site, USERS, { fromEnv: 'SYNC_URL' });
    const watch = spawn(process.execPath, [BIN, 'watch', '--db', site.db, '--out', join(temp.dir, 'watch-out'), '--config', site.config, '--sync-every', '1'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, SYNC_URL: server.url },
    });
    let stderr = '';
    watch.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const seen = async (what: RegExp) => {
      for (let waited = 0; !what.test(stderr); waited += 50) {
        if (waited > 60_000 || watch.exitCode !== null) throw new Error(`no ${what} in:\n${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const pid = server.pid()!;
    try {
      await seen(/sync from MariaDB/);
      process.kill(pid, 'SIGSTOP');
      try {
        await seen(/sync failed, next in 1 s: the source database .*(did not answer for 2 s|ETIMEDOUT)/);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      await server.admin.query('UPDATE members SET login = CONCAT(login, \'-back\') WHERE id = 1');
      await seen(/made 1 change \(users ~1\)/);
    } finally {
      watch.kill('SIGINT');
      await new Promise((r) => watch.once('exit', r));
      mapUsers(site, SLOW_USERS);
    }
  });

  it('watch --sync-every stops at once on SIGINT while its sync waits for a slow source', async () => {
    mapUsers(site, SLEEPING_USERS, { fromEnv: 'SYNC_URL', readTimeoutSeconds: 60 });
    const watch = spawn(process.execPath, [BIN, 'watch', '--db', site.db, '--out', join(temp.dir, 'watch-slow-out'), '--config', site.config, '--sync-every', '1'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, SYNC_URL: server.url },
    });
    let stderr = '';
    watch.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => watch.once('exit', resolve));
    try {
      for (let waited = 0; (await sleeping()) === undefined; waited += 50) {
        if (waited > 60_000 || watch.exitCode !== null) throw new Error(`the watch's sync never waited for the view:\n${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const sent = Date.now();
      watch.kill('SIGINT');
      expect(await exited, stderr).toBe(0);
      expect(Date.now() - sent).toBeLessThan(5000);
      expect(stderr).toMatch(/stopped/);
      expect(stderr).not.toMatch(/sync failed/);
    } finally {
      watch.kill('SIGKILL');
      mapUsers(site, SLOW_USERS);
    }
  });
});
