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
      where: `--user ${JSON.stringify(username)}`,
      what: `no such user in ${file}`,
      ...(near.length > 0 ? { hint: `did you mean ${near.map((n) => JSON.stringify(n)).join(' or ')}?` } : {}),
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
