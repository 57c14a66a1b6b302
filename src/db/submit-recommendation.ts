import type Database from 'better-sqlite3';
import { SITE_FORMATS } from '../formats/site-formats.js';
import { keyProblem } from '../paths/url-scheme.js';

/**
 * Recommendation submit (seed section 4, "Recommendation submit"): the
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

/**
 * A refused field: `message` may quote the input (for the operator's terminal); `reason` never
 * does, so a web response built from it cannot carry anything a submitter wrote.
 */
export interface FieldProblem {
  ok: false;
  field: string;
  message: string;
  reason: string;
}

export type RecommendationValidation = { ok: true; value: NewRecommendation } | FieldProblem;

/** What a site may restrict beyond the rules every submission follows. */
export interface ValidationOptions {
  /** Hosts (`videos.example.org`) or suffixes (`*.example.org`) link and image may name; empty: any. */
  allowedHosts?: readonly string[];
}

// C0 controls, DEL and C1 controls; lone surrogates; the non-characters U+FFFE and U+FFFF.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\ufffe\uffff]|\p{Cs}/u;
// The same, but line breaks and tabs are fine in a description.
const CONTROL_EXCEPT_LINES = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]|\p{Cs}/u;

function length(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

type Check<T> = { ok: true; value: T } | FieldProblem;

/** `shown` is the quoted input, added to the message only. */
function fail(field: string, reason: string, shown?: string): FieldProblem {
  return { ok: false, field, reason, message: shown === undefined ? reason : `${reason}, not ${shown}` };
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

/** Whether `host` is one of `allowed`: equal to a name, or under a `*.suffix` (not the bare suffix). */
export function hostAllowed(host: string, allowed: readonly string[]): boolean {
  const name = host.toLowerCase();
  return allowed.some((entry) => (entry.startsWith('*.') ? name.endsWith(entry.slice(1)) : name === entry));
}

/** An absolute http(s) URL without credentials, normalised (`URL.href`) as the documents publish it. */
function webUrlField(field: 'image' | 'link', raw: string | undefined, allowedHosts: readonly string[]): Check<string> {
  const text = (raw ?? '').trim();
  if (text === '') return fail(field, `${field} is required`);
  const shown = JSON.stringify(length(text) > 80 ? `${[...text].slice(0, 60).join('')}…` : text);
  if (CONTROL.test(text) || /\s/u.test(text)) return fail(field, `${field} must be an absolute http(s) URL without spaces or control characters`, shown);
  if (length(text) > RECOMMENDATION_LIMITS.url) return fail(field, `${field} is ${length(text)} characters long; at most ${RECOMMENDATION_LIMITS.url} are allowed`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail(field, `${field} must be an absolute http(s) URL (such as https://example.org/video)`, shown);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail(field, `${field} must use http or https`, `${url.protocol} (${shown})`);
  if (url.hostname === '') return fail(field, `${field} must name a host`, shown);
  if (url.username !== '' || url.password !== '') return fail(field, `${field} must not carry a user name or password`);
  if (length(url.href) > RECOMMENDATION_LIMITS.url) return fail(field, `${field} is longer than ${RECOMMENDATION_LIMITS.url} characters once encoded`);
  if (allowedHosts.length > 0 && !hostAllowed(url.hostname, allowedHosts)) {
    return fail(field, `${field} must point at ${allowedHosts.join(', ')} (this site's allowed hosts)`, JSON.stringify(url.hostname));
  }
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
  else return fail('duration', 'duration must be mm:ss (such as 03:25) or whole seconds (such as 205)', JSON.stringify(text.slice(0, 40)));
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
export function validateRecommendation(input: RecommendationInput, options: ValidationOptions = {}): RecommendationValidation {
  const allowedHosts = options.allowedHosts ?? [];
  const title = requiredText('title', input.title);
  if (!title.ok) return title;
  const image = webUrlField('image', input.image, allowedHosts);
  if (!image.ok) return image;
  const link = webUrlField('link', input.link, allowedHosts);
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

/** How a submission is stored and limited: `recommendationSubmit` of the configuration. */
export interface SubmitPolicy {
  publishAtOnce: boolean;
  allowedHosts: readonly string[];
  perClient: SubmitLimitPolicy;
  perUser: SubmitLimitPolicy;
}

export interface SubmitLimitPolicy {
  limit: number;
  windowSeconds: number;
  maxPending: number;
}

export interface SubmitRequest {
  username: string;
  input: RecommendationInput;
  /** The client's address (the POST); null for the operator's command line, which no per-client limit counts. */
  submitter: string | null;
  now: Date;
}

export type SubmitResult =
  | { status: 'stored'; id: number; published: boolean }
  | FieldProblem & { status: 'invalid' }
  | { status: 'unknown-user' }
  /** The same link is already in (or was rejected from) this user's list. */
  | { status: 'duplicate'; id: number }
  | { status: 'limited'; scope: 'client' | 'user'; kind: 'rate' | 'pending'; retryAfterSeconds: number; message: string };

type Window = [key: number | string, since: number];

interface Statements {
  publishedUser: Database.Statement<[string], { id: number; username: string }>;
  sameLink: Database.Statement<[number, string], { id: number }>;
  userRecent: Database.Statement<Window, { n: number }>;
  userNthRecent: Database.Statement<[number, number, number], { created_at: number }>;
  userPending: Database.Statement<[number], { n: number }>;
  clientRecent: Database.Statement<Window, { n: number }>;
  clientNthRecent: Database.Statement<[string, number, number], { created_at: number }>;
  clientPending: Database.Statement<[string], { n: number }>;
  insert: Database.Statement<[number, string, string, string, string, number | null, string, string | null, number, number | null], unknown>;
}

/** Statements are prepared once per connection (the serve process stores many). */
const prepared = new WeakMap<Database.Database, Statements>();

function statements(db: Database.Database): Statements {
  let stmts = prepared.get(db);
  if (stmts === undefined) {
    stmts = {
      // The publishing rule of src/db/site-reader.ts: a user is published only when active.
      publishedUser: db.prepare(`SELECT id, username FROM users WHERE username = ? AND state = 'active'`),
      sameLink: db.prepare(`SELECT id FROM recommendations WHERE user_id = ? AND link = ? ORDER BY id LIMIT 1`),
      userRecent: db.prepare(`SELECT count(*) AS n FROM recommendations WHERE user_id = ? AND created_at > ?`),
      userNthRecent: db.prepare(
        `SELECT created_at FROM recommendations WHERE user_id = ? AND created_at > ? ORDER BY created_at LIMIT 1 OFFSET ?`,
      ),
      userPending: db.prepare(`SELECT count(*) AS n FROM recommendations WHERE user_id = ? AND status = 'pending'`),
      clientRecent: db.prepare(`SELECT count(*) AS n FROM recommendations WHERE submitter_address = ? AND created_at > ?`),
      clientNthRecent: db.prepare(
        `SELECT created_at FROM recommendations WHERE submitter_address = ? AND created_at > ? ORDER BY created_at LIMIT 1 OFFSET ?`,
      ),
      clientPending: db.prepare(`SELECT count(*) AS n FROM recommendations WHERE submitter_address = ? AND status = 'pending'`),
      insert: db.prepare(
        `INSERT INTO recommendations
           (user_id, title, link, image, description, duration_seconds, is_public, status, submitter_address, created_at, reviewed_at)
         VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)`,
      ),
    };
    prepared.set(db, stmts);
  }
  return stmts;
}

/** Whether a user's documents can be published: the build's one rule for names (src/paths/names.ts). */
function canBePath(username: string): boolean {
  return keyProblem(username, SITE_FORMATS) === null;
}

/**
 * The rate of one scope: at most `limit` rows dated within the last `windowSeconds`. Past it, the
 * wait is until enough of them have left the window for one more: exact, from the rows' dates.
 */
function rateWait(
  recent: (since: number) => number,
  nth: (since: number, offset: number) => number | undefined,
  limit: SubmitLimitPolicy,
  now: number,
): number | null {
  const since = now - limit.windowSeconds;
  const count = recent(since);
  if (count < limit.limit) return null;
  const leaving = nth(since, count - limit.limit) ?? now;
  return Math.max(1, leaving + limit.windowSeconds - now);
}

/**
 * The one path of a submitted recommendation, for the POST of `vidfeeds serve` and for
 * `vidfeeds recommend`: validation, the user, duplicates, the limits per client and per user,
 * then storage as pending (or published at once, when the site chose that). Checks and insert
 * are one IMMEDIATE transaction, so concurrent submitters (several serve processes included)
 * cannot pass a limit together. Nothing is stored unless the result is `stored`.
 */
export function submitRecommendation(db: Database.Database, request: SubmitRequest, policy: SubmitPolicy): SubmitResult {
  const checked = validateRecommendation(request.input, { allowedHosts: policy.allowedHosts });
  if (!checked.ok) return { ...checked, status: 'invalid' };
  if (!canBePath(request.username)) return { status: 'unknown-user' };
  const value = checked.value;
  const stmts = statements(db);
  const now = Math.floor(request.now.getTime() / 1000);
  const { submitter } = request;
  return db
    .transaction((): SubmitResult => {
      const user = stmts.publishedUser.get(request.username);
      if (user === undefined) return { status: 'unknown-user' };
      const same = stmts.sameLink.get(user.id, value.link);
      if (same !== undefined) return { status: 'duplicate', id: same.id };

      if (submitter !== null) {
        const wait = rateWait(
          (since) => stmts.clientRecent.get(submitter, since)!.n,
          (since, offset) => stmts.clientNthRecent.get(submitter, since, offset)?.created_at,
          policy.perClient,
          now,
        );
        if (wait !== null) {
          const { limit, windowSeconds } = policy.perClient;
          return limited('client', 'rate', wait, `this address has sent ${limit} recommendations in ${windowSeconds} seconds, the most allowed`);
        }
        if (stmts.clientPending.get(submitter)!.n >= policy.perClient.maxPending) {
          return limited('client', 'pending', policy.perClient.windowSeconds, `this address has ${policy.perClient.maxPending} recommendations awaiting moderation, the most allowed`);
        }
      }
      const wait = rateWait(
        (since) => stmts.userRecent.get(user.id, since)!.n,
        (since, offset) => stmts.userNthRecent.get(user.id, since, offset)?.created_at,
        policy.perUser,
        now,
      );
      if (wait !== null) {
        const { limit, windowSeconds } = policy.perUser;
        return limited('user', 'rate', wait, `this user has received ${limit} recommendations in ${windowSeconds} seconds, the most allowed`);
      }
      if (stmts.userPending.get(user.id)!.n >= policy.perUser.maxPending) {
        return limited('user', 'pending', policy.perUser.windowSeconds, `this user has ${policy.perUser.maxPending} recommendations awaiting moderation, the most allowed`);
      }

      const status = policy.publishAtOnce ? 'approved' : 'pending';
      const result = stmts.insert.run(
        user.id,
        value.title,
        value.link,
        value.image,
        value.description,
        value.durationSeconds,
        status,
        submitter,
        now,
        policy.publishAtOnce ? now : null,
      );
      return { status: 'stored', id: Number(result.lastInsertRowid), published: policy.publishAtOnce };
    })
    .immediate();
}

function limited(scope: 'client' | 'user', kind: 'rate' | 'pending', retryAfterSeconds: number, message: string): SubmitResult {
  return { status: 'limited', scope, kind, retryAfterSeconds, message };
}
