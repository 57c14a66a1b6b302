import { describe, expect, it } from 'vitest';
import { openSource } from '../../src/sync/open-source.js';

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
});
