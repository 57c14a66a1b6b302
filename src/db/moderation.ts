import type Database from 'better-sqlite3';

/**
 * Moderation of submitted recommendations (`vidfeeds recommendations list|approve|reject`): the
 * rows as an operator reviews them, and status changes by id or in bulk. A change of status is
 * an UPDATE, which the change log records (migration 3), so the next incremental build or watch
 * publishes an approved item and drops a rejected one. docs/serve.md gives the same steps in SQL.
 */

export const REVIEW_STATUSES = ['pending', 'approved', 'rejected'] as const;
export type ReviewStatus = (typeof REVIEW_STATUSES)[number];

/** Which rows: by id, or all of a status narrowed by user and by submitter address. */
export interface Selection {
  ids?: readonly number[];
  username?: string;
  submitter?: string;
  /** For listing; bulk approve and reject act on pending rows only. */
  status?: ReviewStatus | 'all';
  /** The most rows to list (newest first). */
  limit?: number;
}

export interface ReviewRow {
  id: number;
  username: string;
  status: string;
  createdAt: number;
  submitter: string | null;
  title: string;
  link: string;
  image: string;
}

const ROW_COLUMNS = `r.id, u.username, r.status, r.created_at AS createdAt, r.submitter_address AS submitter, r.title, r.link, r.image`;

function where(selection: Selection, status: ReviewStatus | 'all'): { sql: string; params: Array<string | number> } {
  const parts: string[] = [];
  const params: Array<string | number> = [];
  if (selection.ids !== undefined) {
    parts.push(`r.id IN (SELECT value FROM json_each(?))`);
    params.push(JSON.stringify(selection.ids));
  }
  if (selection.username !== undefined) {
    parts.push('u.username = ?');
    params.push(selection.username);
  }
  if (selection.submitter !== undefined) {
    parts.push('r.submitter_address = ?');
    params.push(selection.submitter);
  }
  if (status !== 'all') {
    parts.push('r.status = ?');
    params.push(status);
  }
  return { sql: parts.length === 0 ? '' : `WHERE ${parts.join(' AND ')}`, params };
}

/** Rows for review, newest first. */
export function listForReview(db: Database.Database, selection: Selection): ReviewRow[] {
  const { sql, params } = where(selection, selection.status ?? 'pending');
  const limit = selection.limit ?? -1;
  return db
    .prepare<Array<string | number>, ReviewRow>(
      `SELECT ${ROW_COLUMNS} FROM recommendations r JOIN users u ON u.id = r.user_id ${sql}
       ORDER BY r.created_at DESC, r.id DESC LIMIT ?`,
    )
    .all(...params, limit);
}

export interface ReviewOutcome {
  /** Ids whose status changed. */
  changed: number[];
  /** Ids asked for by number that do not exist (then nothing changed). */
  missing: number[];
}

/**
 * Sets the status of the selected rows, dated `now`. Rows named by id change whatever their
 * status; a bulk selection (user, submitter, or everything) changes pending rows only, so a bulk
 * approve never republishes what was rejected. All or nothing: when an id does not exist (or is
 * outside the user or address given), nothing changes.
 */
export function review(db: Database.Database, selection: Selection, status: 'approved' | 'rejected', now: Date): ReviewOutcome {
  const byId = selection.ids !== undefined;
  const { sql, params } = where(selection, byId ? 'all' : 'pending');
  const at = Math.floor(now.getTime() / 1000);
  return db
    .transaction((): ReviewOutcome => {
      const ids = db
        .prepare<Array<string | number>, { id: number }>(`SELECT r.id FROM recommendations r JOIN users u ON u.id = r.user_id ${sql} ORDER BY r.id`)
        .all(...params)
        .map((row) => row.id);
      const found = new Set(ids);
      const missing = byId ? selection.ids!.filter((id) => !found.has(id)) : [];
      if (missing.length > 0) return { changed: [], missing };
      const update = db.prepare<[string, number, number, string], unknown>(
        `UPDATE recommendations SET status = ?, reviewed_at = ? WHERE id = ? AND status <> ?`,
      );
      const changed = ids.filter((id) => update.run(status, at, id, status).changes > 0);
      return { changed, missing };
    })
    .immediate();
}
