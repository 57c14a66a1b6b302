import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LOGGED_TABLES, triggerNames } from '../../src/db/change-log-triggers.js';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { createTestDb } from '../helpers/site-fixture.js';

/**
 * The change log's triggers are generated from one description (src/db/change-log-triggers.ts).
 * A released migration never changes: the SQL generated for migrations 2 and 3 must be, byte for
 * byte, what was released (the files under test/fixtures/released-migrations/, written from the
 * hand-written migrations before they were generated).
 */

const released = (version: number) => readFileSync(new URL(`../fixtures/released-migrations/${version}.sql`, import.meta.url), 'utf8');

describe('the change log triggers', () => {
  it('are generated as migrations 2 and 3 were released', () => {
    expect(MIGRATIONS[1]).toBe(released(2));
    expect(MIGRATIONS[2]).toBe(released(3));
  });

  it('are in a new database exactly as described: three per table, logging the described keys', () => {
    const { db } = createTestDb();
    // Later migrations add triggers of their own descriptions (src/db/replaced-rows.ts, type-checks.ts).
    const triggers = db
      .prepare<[], { name: string; tbl_name: string; sql: string }>(`SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'`)
      .all()
      .filter((t) => /_log_(insert|update|delete)$/.test(t.name));
    const described = Object.keys(LOGGED_TABLES).flatMap(triggerNames).sort();
    expect(triggers.map((t) => t.name).sort()).toEqual(described);
    for (const [table, { keys }] of Object.entries(LOGGED_TABLES)) {
      const update = triggers.find((t) => t.name === `${table}_log_update`)!;
      for (const key of keys) expect(update.sql, `${table}.${key}`).toContain(`'${key}', NEW.${key}`);
    }
  });
});
