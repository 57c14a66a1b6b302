import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { EXIT, VidfeedsError } from '../../src/config/vidfeeds-error.js';
import { openForReading } from '../../src/db/open-database.js';
import { RemovalGuardError } from '../../src/pipeline/prune/removal-guard.js';
import { useTempDir } from '../helpers/temp-dir.js';

/** The errors an operator acts on share one base (exit code, what, hint), and a wrapper keeps what it wraps. */
describe('errors', () => {
  it('the removal guard stops with the project error: exit 1, what and what to do', () => {
    const error = new RemovalGuardError(40, 100, { maxShare: 0.25, minimum: 10 });
    expect(error).toBeInstanceOf(VidfeedsError);
    expect(error.exitCode).toBe(EXIT.failed);
    expect(error.name).toBe('RemovalGuardError');
    expect(error.what).toBe('the build would remove 40 of 100 published documents (40%), more than maxRemovalShare allows (25%, and at least 10): nothing was removed');
    expect(error.hint).toBe('if the database is right, build again with --allow-removals (or raise maxRemovalShare in the configuration)');
  });

  it('an error that wraps another passes it as its cause', () => {
    const dir = useTempDir();
    const notDb = join(dir, 'notes.sqlite');
    writeFileSync(notDb, 'not a database, only text long enough to be read as a header by SQLite ........................');
    let thrown: unknown;
    try {
      openForReading(notDb).close();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(VidfeedsError);
    expect((thrown as Error).message).toContain('is not a SQLite database');
    expect((thrown as Error).cause).toMatchObject({ code: 'SQLITE_NOTADB' });

    const missing = join(dir, 'none', 'vidfeeds.config.json');
    writeFileSync(join(dir, 'none'), '');
    try {
      loadConfig({ configFile: missing });
      thrown = undefined;
    } catch (error) {
      thrown = error;
    }
    expect((thrown as Error).cause).toMatchObject({ code: 'ENOTDIR' });
  });
});
