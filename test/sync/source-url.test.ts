import { describe, expect, it } from 'vitest';
import { openSource } from '../../src/sync/open-source.js';
import { redactUrl } from '../../src/sync/sync-source.js';

/**
 * A source URL that cannot name a database stops the sync with a message that says what is wrong
 * and which URL (its password hidden), before any connection is tried.
 */
describe('source URLs', () => {
  it('names a MySQL URL that is not one, or names no database', async () => {
    await expect(openSource('mysql://user:secret@[db/site')).rejects.toThrow(/^the source mysql:\/\/user:\*\*\*@\[db\/site is not a valid URL: write mysql:\/\/USER@HOST:PORT\/DATABASE$/);
    await expect(openSource('mariadb://user:secret@db:3306')).rejects.toThrow(/^the source mariadb:\/\/user:\*\*\*@db:3306 names no database: add \/DATABASE after the host$/);
    await expect(openSource('mysql://db/?socket=/run/mysqld.sock')).rejects.toThrow(/names no database/);
  });

  it('names a PostgreSQL URL that is not one, and a scheme it does not read', async () => {
    await expect(openSource('postgres://user:secret@db:notaport/site')).rejects.toThrow(/^the source URL postgres:\/\/user:\*\*\*@db:notaport\/site cannot be read: /);
    await expect(openSource('oracle://db/site')).rejects.toThrow(/^the source oracle:\/\/db\/site is not a URL vidfeeds can read: it must start with mysql:, mariadb:/);
  });

  it('hides a password that is not percent-encoded, whatever it holds, and says how to write one', async () => {
    // The password runs to the last @: a / or @ in it, or a # or ? (which a URL reads as its end), is hidden too.
    expect(redactUrl('postgres://sp:pa/ss@127.0.0.1:54917/site')).toBe('postgres://sp:***@127.0.0.1:54917/site');
    expect(redactUrl('postgres://sp:pa@ss@host/db')).toBe('postgres://sp:***@host/db');
    expect(redactUrl('mysql://sp:p@ss:w/rd#1?%@127.0.0.1:33917/site')).toBe('mysql://sp:***@127.0.0.1:33917/site');
    expect(redactUrl('mysql://sp@db/site?socket=/run/mysqld.sock')).toBe('mysql://sp@db/site?socket=/run/mysqld.sock');
    expect(redactUrl('postgres://sp@/site?host=/run/postgresql')).toBe('postgres://sp@/site?host=/run/postgresql');
    const hint = / \(a password with \/, @, :, #, \? or % in it must be percent-encoded in the URL: %2F, %40, %3A, %23, %3F, %25; or leave it out of the URL and give it in sync\.passwordFile\)$/;
    const unreadable = openSource('postgres://sp:pa/ss@127.0.0.1:54917/site');
    await expect(unreadable).rejects.toThrow(/^the source URL postgres:\/\/sp:\*\*\*@127\.0\.0\.1:54917\/site cannot be read: Invalid URL \(/);
    await expect(unreadable).rejects.toThrow(hint);
    await expect(unreadable).rejects.not.toThrow(/pa\/ss|ss@/);
    const mysql = openSource('mysql://sp:p@ss:w/rd#1?%@127.0.0.1:33917/site');
    await expect(mysql).rejects.toThrow(/^the source mysql:\/\/sp:\*\*\*@127\.0\.0\.1:33917\/site is not a valid URL: write mysql:\/\/USER@HOST:PORT\/DATABASE \(/);
    await expect(mysql).rejects.toThrow(hint);
    // Without a password there is none to hide, and nothing to say about one.
    await expect(openSource('mysql://sp@[db/site')).rejects.toThrow(/^the source mysql:\/\/sp@\[db\/site is not a valid URL: write mysql:\/\/USER@HOST:PORT\/DATABASE$/);
  });

  it('refuses a MySQL URL parameter it does not read, before connecting, rather than dropping it', async () => {
    await expect(openSource('mysql://sp:secret@127.0.0.1:1/site?sslmode=REQUIRED&bogus=1')).rejects.toThrow(
      /^the source mysql:\/\/sp:\*\*\*@127\.0\.0\.1:1\/site\?sslmode=REQUIRED&bogus=1 has the parameter sslmode, bogus, which vidfeeds does not read: a MySQL URL takes \?socket=PATH and \?ssl=true /,
    );
    await expect(openSource('mysql://sp@127.0.0.1:1/site?ssl=REQUIRED')).rejects.toThrow(/has \?ssl=REQUIRED, which is not true, false or a JSON object of mysql2's TLS options/);
  });
});
