import type Database from 'better-sqlite3';
import { SITE_FORMATS } from '../formats/site-formats.js';
import { keyProblem } from '../paths/url-scheme.js';

/**
 * Why a username or video id read with a row cannot be published, or null: the build's one rule
 * (`keyProblem` over the site-wide files' names), applied where a bundle lists another owner, so
 * that a document never lists (or links to) a video or a person the build skips for its name.
 * Most keys are letters, digits, `-` and `_`: no rule refuses those (every site-wide file's name
 * has a dot), and they are passed without the rule's Unicode checks, which a feed-heavy build
 * would otherwise make for every row it reads.
 */
export function keyProblemOf(key: unknown): string | null {
  if (typeof key !== 'string') return 'is not text';
  return PLAIN_KEY.test(key) ? null : keyProblem(key, SITE_FORMATS);
}

const PLAIN_KEY = /^[A-Za-z0-9_-]{1,255}$/;

/** The SQL function, 1 when `keyProblemOf` finds no problem, that the reader's conditions call (listedUser). */
export const KEY_FUNCTION = 'vidfeeds_publishable_key';

/** Defines KEY_FUNCTION on a connection, before statements that call it are prepared. */
export function registerKeyFunction(db: Database.Database): void {
  db.function(KEY_FUNCTION, { deterministic: true }, (key: unknown) => (keyProblemOf(key) === null ? 1 : 0));
}
