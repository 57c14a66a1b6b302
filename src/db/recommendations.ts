import type Database from 'better-sqlite3';
import { SITE_FORMATS } from '../formats/site-formats.js';
import { segmentProblem } from '../paths/names.js';
import { isSiteFileName } from '../paths/site-paths.js';

/**
 * Recommendation submit (seed section 4, "Recommendation submit"; PRODUCT.md decision 6): the
 * validation and storage that `vidfeeds recommend` and the POST of `vidfeeds serve` share, so
 * both accept and refuse exactly the same input.
 */

export interface NewRecommendation {
  title: string;
  image: string;
  link: string;
  description: string;
  durationSeconds: number | null;
}

export type RecommendationInput = Partial<Record<'title' | 'image' | 'link' | 'description' | 'duration', string>>;

/** Limits, in characters (Unicode code points). docs/formats.md repeats them. */
export const RECOMMENDATION_LIMITS = {
  title: 300,
  description: 5000,
  /** For `link` and `image`: the length browsers, servers and sitemaps all handle. */
  url: 2048,
  /** 100 hours; longer is a typing mistake, not a video. */
  durationSeconds: 360_000,
} as const;

export type RecommendationValidation = { ok: true; value: NewRecommendation } | { ok: false; field: string; message: string };

// C0 controls, DEL and C1 controls; lone surrogates; the non-characters U+FFFE and U+FFFF.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\ufffe\uffff]|\p{Cs}/u;
// The same, but line breaks and tabs are fine in a description.
const CONTROL_EXCEPT_LINES = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]|\p{Cs}/u;

function length(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

type Check<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

function fail(field: string, message: string): { ok: false; field: string; message: string } {
  return { ok: false, field, message };
}

function requiredText(field: 'title', raw: string | undefined): Check<string> {
  const text = (raw ?? '').trim();
  if (text === '') return fail(field, `${field} is required`);
  if (CONTROL.test(text)) return fail(field, `${field} must not contain control characters (line breaks, tabs, NUL, ...)`);
  const n = length(text);
  if (n > RECOMMENDATION_LIMITS.title) return fail(field, `${field} is ${n} characters long; at most ${RECOMMENDATION_LIMITS.title} are allowed`);
  return { ok: true, value: text };
}

function optionalDescription(raw: string | undefined): Check<string> {
  const text = (raw ?? '').trim();
  if (CONTROL_EXCEPT_LINES.test(text)) return fail('description', 'description must not contain control characters other than line breaks and tabs');
  const n = length(text);
  if (n > RECOMMENDATION_LIMITS.description) {
    return fail('description', `description is ${n} characters long; at most ${RECOMMENDATION_LIMITS.description} are allowed`);
  }
  return { ok: true, value: text };
}

/** An absolute http(s) URL without credentials, normalised (`URL.href`) as the documents publish it. */
function webUrlField(field: 'image' | 'link', raw: string | undefined): Check<string> {
  const text = (raw ?? '').trim();
  if (text === '') return fail(field, `${field} is required`);
  const shown = JSON.stringify(length(text) > 80 ? `${[...text].slice(0, 60).join('')}…` : text);
  if (CONTROL.test(text) || /\s/u.test(text)) return fail(field, `${field} must be an absolute http(s) URL without spaces or control characters, not ${shown}`);
  if (length(text) > RECOMMENDATION_LIMITS.url) return fail(field, `${field} is ${length(text)} characters long; at most ${RECOMMENDATION_LIMITS.url} are allowed`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail(field, `${field} must be an absolute http(s) URL (such as https://example.org/video), not ${shown}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail(field, `${field} must use http or https, not ${url.protocol} (${shown})`);
  if (url.hostname === '') return fail(field, `${field} must name a host: ${shown}`);
  if (url.username !== '' || url.password !== '') return fail(field, `${field} must not carry a user name or password`);
  if (length(url.href) > RECOMMENDATION_LIMITS.url) return fail(field, `${field} is longer than ${RECOMMENDATION_LIMITS.url} characters once encoded`);
  return { ok: true, value: url.href };
}

/** `mm:ss` (minutes unbounded, seconds 00-59) or whole seconds; empty means unknown. */
function durationField(raw: string | undefined): Check<number | null> {
  const text = (raw ?? '').trim();
  if (text === '') return { ok: true, value: null };
  let seconds: number;
  const mmss = /^(\d{1,6}):([0-5]\d)$/.exec(text);
  if (mmss) seconds = Number(mmss[1]) * 60 + Number(mmss[2]);
  else if (/^\d{1,9}$/.test(text)) seconds = Number(text);
  else return fail('duration', `duration must be mm:ss (such as 03:25) or whole seconds (such as 205), not ${JSON.stringify(text.slice(0, 40))}`);
  if (seconds > RECOMMENDATION_LIMITS.durationSeconds) {
    return fail('duration', `duration is ${seconds} seconds; at most ${RECOMMENDATION_LIMITS.durationSeconds} (100 hours) are allowed`);
  }
  return { ok: true, value: seconds };
}

/**
 * Checks a submitted recommendation: `title`, `image` and `link` are required; `image` and `link`
 * are absolute http(s) URLs; `description` and `duration` are optional. Surrounding white space
 * is trimmed. The first problem found is returned, naming its field.
 */
export function validateRecommendation(input: RecommendationInput): RecommendationValidation {
  const title = requiredText('title', input.title);
  if (!title.ok) return title;
  const image = webUrlField('image', input.image);
  if (!image.ok) return image;
  const link = webUrlField('link', input.link);
  if (!link.ok) return link;
  const description = optionalDescription(input.description);
  if (!description.ok) return description;
  const duration = durationField(input.duration);
  if (!duration.ok) return duration;
  return {
    ok: true,
    value: { title: title.value, image: image.value, link: link.value, description: description.value, durationSeconds: duration.value },
  };
}

interface Statements {
  publishedUser: Database.Statement<[string], { id: number; username: string }>;
  insert: Database.Statement<[number, string, string, string, string, number | null, number], unknown>;
}

/** Statements are prepared once per connection (the serve process stores many). */
const prepared = new WeakMap<Database.Database, Statements>();

function statements(db: Database.Database): Statements {
  let stmts = prepared.get(db);
  if (stmts === undefined) {
    stmts = {
      // The publishing rule of src/db/site-reader.ts: a user is published only when active.
      publishedUser: db.prepare(`SELECT id, username FROM users WHERE username = ? AND state = 'active'`),
      insert: db.prepare(
        `INSERT INTO recommendations (user_id, title, link, image, description, duration_seconds, is_public, created_at)
         VALUES (?, ?, ?, ?, ?, ?, 1, ?)`,
      ),
    };
    prepared.set(db, stmts);
  }
  return stmts;
}

/** Whether a username can be a path segment of the tree (PRODUCT.md, "Names"). */
function canBePath(username: string): boolean {
  return segmentProblem(username, (name) => isSiteFileName(name, SITE_FORMATS)) === null;
}

/**
 * Stores a validated recommendation for `username`, public, dated `now`, so the next build lists
 * it first. A user who does not exist, is not published (suspended or deleted) or whose name can
 * never be a path is `unknown-user`, and nothing is stored.
 */
export function storeRecommendation(
  db: Database.Database,
  username: string,
  value: NewRecommendation,
  now: Date,
): { status: 'stored'; id: number } | { status: 'unknown-user' } {
  if (!canBePath(username)) return { status: 'unknown-user' };
  const stmts = statements(db);
  return db.transaction(() => {
    const user = stmts.publishedUser.get(username);
    if (user === undefined) return { status: 'unknown-user' as const };
    const result = stmts.insert.run(
      user.id,
      value.title,
      value.link,
      value.image,
      value.description,
      value.durationSeconds,
      Math.floor(now.getTime() / 1000),
    );
    return { status: 'stored' as const, id: Number(result.lastInsertRowid) };
  })();
}
