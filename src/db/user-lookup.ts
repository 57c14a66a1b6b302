import { quoted } from '../config/shown-text.js';
import { SITE_TABLES, typeCondition } from './columns.js';
import { openForReading } from './open-database.js';
import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';

/** `--user NAME` names no user of the database. Exit code 2. */
export class UnknownUserError extends VidfeedsError {
  constructor(
    readonly username: string,
    file: string,
    near: readonly string[],
  ) {
    super(EXIT.usage, {
      where: `--user ${quoted(username)}`,
      what: `no such user in ${file}`,
      ...(near.length > 0 ? { hint: `did you mean ${near.map((n) => quoted(n)).join(' or ')}?` } : {}),
    });
  }
}

/**
 * Refuses a username the database does not hold. A suspended or deleted user is known: building
 * one is how their documents are removed at once.
 */
export function checkUserExists(file: string, username: string): void {
  const db = openForReading(file);
  try {
    if (db.prepare('SELECT 1 FROM users WHERE username = ?').get(username) !== undefined) return;
    const near = db.prepare('SELECT username FROM users WHERE username = ? COLLATE NOCASE ORDER BY username LIMIT 3').pluck().all(username) as string[];
    throw new UnknownUserError(username, file, near);
  } finally {
    db.close();
  }
}

/**
 * How many users the database publishes (active, with a username and creation time of their
 * kinds: src/db/columns.ts) and how many rows `users` holds. A build that publishes nobody says
 * so: a database that is the site's own with vidfeeds's tables added empty beside it
 * (`init --force`) looks like a site without users.
 */
export function publishedUserCount(file: string): { published: number; rows: number } {
  const db = openForReading(file);
  try {
    const owner = Object.entries(SITE_TABLES.users!.columns).filter(([, c]) => c.rule === 'owner').map(([column, c]) => typeCondition(c, column));
    return db.prepare(`SELECT count(*) FILTER (WHERE state = 'active' AND ${owner.join(' AND ')}) AS published, count(*) AS rows FROM users`).get() as { published: number; rows: number };
  } finally {
    db.close();
  }
}
