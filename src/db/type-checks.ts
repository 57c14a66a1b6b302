import type Database from 'better-sqlite3';
import { expected, MAX_UNIX_SECONDS, storageKind, typeCondition, type ColumnSpec, type TableSpec } from './columns.js';
import { describeValue, issueOf, type ValueIssue } from './decode.js';

/**
 * The schema refuses values of the wrong type at write time. Rebuilding every table as STRICT
 * would copy every row and every index of a site that may be large and is not ours; instead each
 * table gets BEFORE INSERT and BEFORE UPDATE triggers that check every column with `typeof()` and
 * the column's range (src/db/columns.ts), and abort the statement naming the column:
 * `users.created_at: expected an integer number of Unix seconds ...`. Rows already stored are
 * left as they are: `wrongTypeRows` names them, and builds decode them by their column's rule.
 */

/** The SQL of a migration that adds the type-checking triggers of `tables`. */
export function typeCheckMigration(tables: Readonly<Record<string, TableSpec>>): string {
  const statements: string[] = [];
  for (const [table, spec] of Object.entries(tables)) {
    for (const [event, name] of [['INSERT', 'insert'], ['UPDATE', 'update']] as const) {
      const checks = Object.entries(spec.columns).map(([column, c]) => {
        const stored = storageKind(c);
        return `  SELECT RAISE(ABORT, ${sqlString(`${table}.${column}: expected ${expected(stored)}`)}) WHERE NOT ${typeCondition(stored, `NEW.${column}`)};`;
      });
      statements.push(`CREATE TRIGGER ${table}_types_${name} BEFORE ${event} ON ${table} BEGIN\n${checks.join('\n')}\nEND;`);
    }
  }
  return statements.join('\n');
}

/**
 * A user is published only when its `owner` columns (src/db/columns.ts) hold values of their kind.
 * An UPDATE that corrects one of them (a creation time stored as text before the type checks)
 * publishes the user, which other users' documents must then show, as when its state becomes
 * active; migration 2's log entry would not say so. This trigger logs it as a change of the person.
 */
export function ownerColumnsLog(tables: Readonly<Record<string, TableSpec>>): string {
  const owner = Object.entries(tables.users!.columns).filter(([, c]) => c.rule === 'owner');
  const valid = (row: 'OLD' | 'NEW') => `(${owner.map(([column, c]) => typeCondition(c, `${row}.${column}`)).join(' AND ')})`;
  const keys = (row: 'OLD' | 'NEW') => `json_object('id', ${row}.id, 'username', ${row}.username, 'state', ${row}.state`;
  return (
    `CREATE TRIGGER users_log_publishable AFTER UPDATE OF ${owner.map(([column]) => column).join(', ')} ON users ` +
    `WHEN ${valid('OLD')} IS NOT ${valid('NEW')} BEGIN
` +
    `  INSERT INTO change_log (table_name, op, old_keys, new_keys) VALUES ('users', 'update', ${keys('OLD')}), ${keys('NEW')}, 'person_changed', 1));
` +
    'END;'
  );
}

/** Names of the triggers `typeCheckMigration` creates for `tables`. */
export function typeCheckTriggers(tables: Readonly<Record<string, TableSpec>>): string[] {
  return Object.keys(tables).flatMap((table) => [`${table}_types_insert`, `${table}_types_update`]);
}

/**
 * Every stored value of `tables` that is not of its column's kind, one issue per value, in table
 * and key order. `only` narrows the columns looked at. One query per table, a full scan.
 */
export function* wrongTypeRows(
  db: Database.Database,
  tables: Readonly<Record<string, TableSpec>>,
  only: (spec: ColumnSpec) => boolean = () => true,
): Generator<ValueIssue> {
  for (const [table, spec] of Object.entries(tables)) {
    const columns = Object.entries(spec.columns).filter(([, c]) => only(c));
    if (columns.length === 0) continue;
    const keys = spec.key.join(', ');
    const wrong = columns.map(([column, c]) => `NOT ${typeCondition(c, column)}`).join(' OR ');
    const rows = db
      .prepare(`SELECT ${keys}, ${columns.map(([column]) => column).join(', ')} FROM ${table} WHERE ${wrong} ORDER BY ${keys}`)
      .iterate() as Iterable<Record<string, unknown>>;
    for (const row of rows) {
      const rowName = spec.key.map((k) => `${k}=${typeof row[k] === 'number' ? row[k] : describeValue(row[k])}`).join(', ');
      for (const [column, c] of columns) {
        if (!matchesKind(c, row[column])) yield issueOf(table, rowName, column, row[column]);
      }
    }
  }
}

/**
 * Whether a value as better-sqlite3 returns it is of a column's kind: the JavaScript side of
 * `typeCondition`, storage classes and ranges only (a URL's or a media type's form is checked
 * where it is read).
 */
export function matchesKind(spec: ColumnSpec, value: unknown): boolean {
  if (value === null) return spec.nullable === true;
  const integer = typeof value === 'number' && Number.isSafeInteger(value);
  switch (spec.kind) {
    case 'id':
    case 'ref':
      return integer;
    case 'time':
      return integer && (value as number) >= 0 && (value as number) <= MAX_UNIX_SECONDS;
    case 'count':
      return integer && (value as number) >= 0;
    case 'dimension':
      return integer && (value as number) >= 1;
    case 'flag':
      return value === 0 || value === 1;
    case 'fraction':
      return typeof value === 'number' && value >= 0 && value <= 1;
    case 'enum':
      return typeof value === 'string' && (spec.values ?? []).includes(value);
    case 'text':
    case 'url':
    case 'name':
    case 'mediaType':
      return typeof value === 'string';
  }
}

function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
