import type Database from 'better-sqlite3';
import { closeSync, fstatSync, openSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join, sep } from 'node:path';
import { SiteReader } from '../db/site-reader.js';
import { readLimits } from '../formats/read-limits.js';
import type { SiteContext, UserFormat, VideoFormat } from '../formats/format.js';
import {
  MAX_RECOMMENDATIONS,
  OEMBED_DYNAMIC_PARAMS,
  RECOMMENDATION_POST_MAX_BYTES,
  RECOMMENDATIONS_PARAM,
  type RouteMatch,
  type Routes,
} from '../hosting/routes.js';
import { xmlDocument } from '../render/xml.js';
import { callbackProblem, jsonpBody } from './jsonp.js';
import { bareMediaType, ENCODINGS } from '../paths/compression.js';
import { matchRoute, splitUrlPath } from '../paths/url-scheme.js';
import { cacheControlOf } from '../hosting/cache-control.js';
import { acceptedEncodings, documentResponse, finish, textResponse, type ServeResponse } from './responses.js';
import { ClientAddresses } from './client-address.js';
import { oembedHtml, oembedJson, oembedResponse, oembedXml, submitRecommendation, videoByPublicId } from './site-apis.js';

/**
 * The core of `vidfeeds serve`: one request in, one response out, no socket. It serves the built
 * tree with the rules of the generated nginx configuration (src/hosting/routes.ts) and answers from
 * the database what files cannot: oEmbed parameters and JSONP, `?recommendations=N`, and the
 * recommendation POST. The HTTP layer (http-server.ts) reads the body and writes the answer.
 */

export interface ServeRequest {
  method: string;
  /** The request target as sent (`/alice/rss/?x=1`), still percent-encoded. */
  target: string;
  headers: Record<string, string | string[] | undefined>;
  body?: Buffer;
  /** The address of the connection (the socket's peer): a client, or a proxy in front. */
  remoteAddress?: string;
}

export interface SiteServerDeps {
  /** The built tree. */
  root: string;
  site: SiteContext;
  routes: Routes;
  /** Read-only connection to the site database. */
  db: Database.Database;
  /** Opens a connection that may write (for the recommendation POST), on first use. */
  openForWriting: () => Database.Database;
  /**
   * The database file and how to open it for reading: when the file at that path is replaced (a
   * restore, a deploy), the server answers from the new one. Without it, `db` is used as it is.
   */
  reopen?: { file: string; openForReading: () => Database.Database };
  /** The clock for stored recommendations. */
  now?: () => Date;
}

const OEMBED_SIZE_PARAMS = ['maxwidth', 'maxheight', 'width', 'height'] as const;
const MAX_SIZE = 10_000;

/** The form fields of the recommendation POST (seed section 4; `duration` is ours, mm:ss). */
const POST_FIELDS = ['title', 'image', 'link', 'description', 'duration'] as const;

/**
 * How long `respond` retries a request that found the database locked (a build reading a
 * rollback-journal database holds it for the whole build), pausing between tries without holding
 * up other requests, before it answers 503.
 */
const BUSY_DEADLINE_MS = 3000;
/** Retry-After of that 503, in seconds. */
const BUSY_RETRY_AFTER_SECONDS = 30;

export class SiteServer {
  private readonly realRoot: string;
  private readonly readers = new Map<number, SiteReader>();
  private writer: Database.Database | null = null;
  private readonly clients: ClientAddresses;
  private db: Database.Database;
  /** The database file's identity when `db` was opened (device and inode). */
  private dbIdentity: string | null;

  constructor(private readonly deps: SiteServerDeps) {
    this.realRoot = realpathSync(deps.root);
    this.clients = new ClientAddresses(deps.site.config.recommendationSubmit.trustedProxies);
    this.db = deps.db;
    // A request never waits on the database while holding up the others: `respond` retries.
    this.db.pragma('busy_timeout = 0');
    this.dbIdentity = deps.reopen === undefined ? null : fileIdentity(deps.reopen.file);
  }

  /**
   * Answers one request at once. Never throws for anything a client sends; a database locked by
   * another connection answers 503 with Retry-After.
   */
  handle(request: ServeRequest): ServeResponse {
    try {
      return finish(this.route(request), request);
    } catch (error) {
      if (!isBusy(error)) throw error;
      return finish(busyResponse(), request);
    }
  }

  /**
   * Answers one request, retrying while the database is locked (for up to BUSY_DEADLINE_MS, in
   * pauses that leave the event loop to other requests), then 503 with Retry-After. A POST that
   * is not stored leaves nothing behind: its transaction is rolled back whole.
   */
  async respond(request: ServeRequest): Promise<ServeResponse> {
    const deadline = Date.now() + BUSY_DEADLINE_MS;
    for (let pause = 10; ; pause = Math.min(pause * 2, 250)) {
      try {
        return finish(this.route(request), request);
      } catch (error) {
        if (!isBusy(error)) throw error;
        if (Date.now() + pause > deadline) return finish(busyResponse(), request);
        await sleep(pause);
      }
    }
  }

  /**
   * The address a request comes from as this server determines it (X-Forwarded-For only from a
   * trusted proxy): the one its limits count and its access log names. A trusted proxy's entry that
   * is no address leaves the connection's own address.
   */
  clientAddress(request: Pick<ServeRequest, 'remoteAddress' | 'headers'>): string {
    const peer = request.remoteAddress ?? '';
    return this.clients.of(peer, request.headers['x-forwarded-for']) ?? this.clients.of(peer, undefined)!;
  }

  close(): void {
    this.writer?.close();
    this.writer = null;
    if (this.db !== this.deps.db) this.db.close();
  }

  /**
   * The database file replaced at its path (a restore, a deploy) is opened anew, so nothing is
   * answered from the old one (a video made private since, say). Costs one stat per request that
   * reads the database.
   */
  private database(): Database.Database {
    const { reopen } = this.deps;
    if (reopen === undefined) return this.db;
    const identity = fileIdentity(reopen.file);
    if (identity === null || identity === this.dbIdentity) return this.db;
    const fresh = reopen.openForReading();
    fresh.pragma('busy_timeout = 0');
    this.db.close();
    this.db = fresh;
    this.dbIdentity = identity;
    this.readers.clear();
    this.writer?.close();
    this.writer = null;
    return fresh;
  }

  private route(request: ServeRequest): ServeResponse {
    const method = request.method.toUpperCase();
    if (!request.target.startsWith('/')) return textResponse(400, 'bad request target');
    const queryAt = request.target.indexOf('?');
    const rawPath = queryAt === -1 ? request.target : request.target.slice(0, queryAt);
    const query = new URLSearchParams(queryAt === -1 ? '' : request.target.slice(queryAt + 1));
    const segments = splitUrlPath(rawPath, this.deps.site.paths.basePath);
    // matchRoute applies the build's one rule for names (keyProblem): a key the build never writes
    // is never answered, from a file or from the database, so the preview and the static tree agree.
    const match = segments === null ? null : matchRoute(this.deps.routes, segments);
    if (match === null) return notFound();

    const { routes } = this.deps;
    const isRecommendations = match.kind === 'keyed' && routes.recommendations !== null && match.format === routes.recommendations;
    if (method === 'POST' && isRecommendations) return this.postRecommendation(match.key, request);
    if (method !== 'GET' && method !== 'HEAD') {
      return textResponse(405, `${method} is not allowed here`, { Allow: isRecommendations ? 'GET, HEAD, POST' : 'GET, HEAD' });
    }

    if (match.kind === 'keyed' && routes.oembed !== null && match.format.scope === 'video' && match.format.dir === routes.oembed.dir) {
      return this.oembed(match.key, match.format, segments!, query, request);
    }
    if (isRecommendations && present(query, RECOMMENDATIONS_PARAM)) {
      return this.recommendations(match.key, match.format as UserFormat, query.get(RECOMMENDATIONS_PARAM)!);
    }
    return this.file(match, request);
  }

  /**
   * A file of the tree, as nginx sends it: its pre-compressed form (`.br`, `.gz`) when the client
   * takes that encoding and the build wrote one, with the document's own Content-Type.
   */
  private file(match: RouteMatch, request: ServeRequest): ServeResponse {
    const full = join(this.deps.root, ...match.file.split('/'));
    const cache = { 'Cache-Control': cacheControlOf(this.deps.site.config.cacheControl, match.format), ...match.format.headers };
    const accepted = acceptedEncodings(headerText(request.headers['accept-encoding']));
    for (const encoding of accepted) {
      const found = this.read(`${full}${ENCODINGS[encoding].suffix}`);
      if (found !== null) {
        return documentResponse(200, match.format.mediaType, found.body, { ...cache, 'Last-Modified': found.lastModified, 'Content-Encoding': encoding });
      }
    }
    const found = this.read(full);
    return found === null ? notFound() : documentResponse(200, match.format.mediaType, found.body, { ...cache, 'Last-Modified': found.lastModified });
  }

  /**
   * A file's bytes and modification time (as Last-Modified: the file sent, as nginx dates it);
   * null when it is absent or a link out of the tree (nginx: disable_symlinks).
   */
  private read(full: string): { body: Buffer; lastModified: string } | null {
    try {
      const real = realpathSync(full);
      if (!real.startsWith(this.realRoot + sep)) return null;
      // One open file for both, so that a file the build renames into place meanwhile is not dated by the other.
      const fd = openSync(real, 'r');
      try {
        return { body: readFileSync(fd), lastModified: fstatSync(fd).mtime.toUTCString() };
      } finally {
        closeSync(fd);
      }
    } catch {
      return null;
    }
  }

  /** The oEmbed endpoint: files for the defaults, the database for parameters (oEmbed 1.0 section 2.3). */
  private oembed(key: string, format: VideoFormat, segments: string[], query: URLSearchParams, request: ServeRequest): ServeResponse {
    const endpoint = this.deps.routes.oembed!;
    let form = format;
    if (format === endpoint.index) {
      const wanted = query.get('format') ?? '';
      if (wanted !== '') {
        const chosen = endpoint.byFormatParam.get(wanted);
        if (chosen === undefined) {
          return textResponse(501, `oEmbed format ${JSON.stringify(wanted)} is not supported; use ${[...endpoint.byFormatParam.keys()].join(' or ')}`);
        }
        form = chosen;
      }
    }
    if (!OEMBED_DYNAMIC_PARAMS.some((name) => present(query, name))) {
      return this.file({ kind: 'keyed', format: form, key, file: this.deps.site.paths.file(form, key) }, request);
    }

    const sizes: Partial<Record<(typeof OEMBED_SIZE_PARAMS)[number], number>> = {};
    for (const name of OEMBED_SIZE_PARAMS) {
      if (!present(query, name)) continue;
      const value = query.get(name)!;
      if (!/^\d{1,5}$/.test(value) || Number(value) < 1 || Number(value) > MAX_SIZE) {
        return textResponse(400, `${name} must be a whole number from 1 to ${MAX_SIZE}, not ${JSON.stringify(value.slice(0, 40))}`);
      }
      sizes[name] = Number(value);
    }
    const callback = present(query, 'callback') ? query.get('callback')! : null;
    const kind = bareMediaType(form.mediaType);
    const isJson = kind === 'application/json';
    if (callback !== null) {
      const problem = callbackProblem(callback);
      if (problem !== null) return textResponse(400, `callback ${problem}`);
      if (!isJson) return textResponse(400, 'callback works only with the JSON form');
    }

    const { site } = this.deps;
    const reader = this.reader(site.config.recommendationsCount);
    const found = reader.snapshot(() => videoByPublicId(reader, key));
    if (found.status === 'missing') return notFound(`no video ${JSON.stringify(key)}`);
    if (found.status === 'private') return textResponse(401, `video ${JSON.stringify(key)} is not public`);
    if (present(query, 'url')) {
      const id = site.paths.videoIdOfPage(query.get('url')!);
      if (id === null) return notFound('url is not a video page of this site');
      if (id !== key) return notFound(`url names video ${JSON.stringify(id)}, but this is the oEmbed endpoint of ${JSON.stringify(key)}`);
    }
    // The seed's width/height ask for a player size; oEmbed answers within bounds, so they bound it.
    const response = oembedResponse(found.video, site, {
      maxwidth: sizes.maxwidth ?? sizes.width,
      maxheight: sizes.maxheight ?? sizes.height,
    });
    const cache = { 'Cache-Control': cacheControlOf(site.config.cacheControl, form) };
    if (callback !== null) return documentResponse(200, 'application/javascript; charset=utf-8', jsonpBody(callback, oembedJson(response)), cache);
    const body = isJson ? oembedJson(response) : kind === 'text/html' ? oembedHtml(response) : oembedXml(response);
    return documentResponse(200, form.mediaType, body, cache);
  }

  /** `?recommendations=N`: the document rendered with N items instead of the configured count. */
  private recommendations(username: string, format: UserFormat, raw: string): ServeResponse {
    if (!/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_RECOMMENDATIONS) {
      return textResponse(400, `${RECOMMENDATIONS_PARAM} must be a whole number from 1 to ${MAX_RECOMMENDATIONS}, not ${JSON.stringify(raw.slice(0, 40))}`);
    }
    const reader = this.reader(Number(raw));
    const body = reader.snapshot(() => {
      const [row] = [...reader.users(username)];
      if (row === undefined || this.deps.site.paths.problem(row.username) !== null) return null;
      return format.render(reader.userBundle(row.id, new Set(format.needs)), this.deps.site);
    });
    if (body === null) return notFound(`no user ${JSON.stringify(username)}`);
    return documentResponse(200, format.mediaType, body, { 'Cache-Control': cacheControlOf(this.deps.site.config.cacheControl, format) });
  }

  /**
   * The recommendation POST (seed section 4), form-encoded, through the path `vidfeeds recommend`
   * shares (src/db/submit-recommendation.ts). 202 when held for moderation, 201 when published at once;
   * 409 for a link the user's list already has; 429 with Retry-After past a limit. No answer
   * repeats what was sent: the body names the stored id and its status, or the refused field.
   */
  private postRecommendation(username: string, request: ServeRequest): ServeResponse {
    const body = request.body ?? Buffer.alloc(0);
    if (body.length > RECOMMENDATION_POST_MAX_BYTES) return textResponse(413, `the body is larger than ${RECOMMENDATION_POST_MAX_BYTES} bytes`);
    const type = String(request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded') {
      return textResponse(415, 'send the fields form-encoded (Content-Type: application/x-www-form-urlencoded)');
    }
    const text = body.toString('utf8');
    if (Buffer.from(text, 'utf8').length !== body.length) return textResponse(400, 'the body is not valid UTF-8');
    const form = new URLSearchParams(text);
    const input: Partial<Record<(typeof POST_FIELDS)[number], string>> = {};
    for (const field of POST_FIELDS) {
      const values = form.getAll(field);
      if (values.length > 1) return textResponse(400, `${field}: given ${values.length} times`);
      if (values.length === 1) input[field] = values[0];
    }
    const submitter = this.clients.of(request.remoteAddress ?? '', request.headers['x-forwarded-for']);
    if (submitter === null) return textResponse(400, 'X-Forwarded-For from a trusted proxy holds something that is not an address');
    if (this.deps.site.paths.problem(username) !== null) return notFound('no such user');
    this.database();
    if (this.writer === null) {
      this.writer = this.deps.openForWriting();
      this.writer.pragma('busy_timeout = 0');
    }
    const now = (this.deps.now ?? (() => new Date()))();
    const result = submitRecommendation(this.writer, { username, input, submitter, now }, this.deps.site.config.recommendationSubmit);
    switch (result.status) {
      case 'invalid':
        return textResponse(400, `${result.field}: ${result.reason}`);
      case 'unknown-user':
        return notFound('no such user');
      case 'duplicate':
        return textResponse(409, `this link is already among the user's recommendations (${result.id})`);
      case 'limited':
        return textResponse(429, `${result.message}; try again later`, { 'Retry-After': String(result.retryAfterSeconds) });
      case 'stored': {
        const status = result.published ? 'approved' : 'pending';
        const body = xmlDocument('recommendation', { id: result.id, status }, () => {});
        const location = this.deps.site.paths.url(this.deps.routes.recommendations!, username);
        return documentResponse(result.published ? 201 : 202, 'application/xml; charset=utf-8', body, { Location: location });
      }
    }
  }

  /** Readers by recommendation count: SiteReader takes the count when it prepares its statements. */
  private reader(count: number): SiteReader {
    const db = this.database();
    let reader = this.readers.get(count);
    if (reader === undefined) {
      reader = new SiteReader(db, readLimits(count));
      this.readers.set(count, reader);
    }
    return reader;
  }
}

/** The device and inode of a file, or null when it is not there (being replaced: the old one serves meanwhile). */
function fileIdentity(file: string): string | null {
  const stat = statSync(file, { throwIfNoEntry: false, bigint: true });
  return stat === undefined ? null : `${stat.dev}:${stat.ino}`;
}

/** SQLite's answer when another connection holds the lock this one needs. */
function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

function busyResponse(): ServeResponse {
  return textResponse(503, 'the site database is busy (a build or another writer holds it); nothing was stored: try again later', {
    'Retry-After': String(BUSY_RETRY_AFTER_SECONDS),
  });
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function present(query: URLSearchParams, name: string): boolean {
  return (query.get(name) ?? '') !== '';
}

function notFound(message = 'not found'): ServeResponse {
  return textResponse(404, message);
}
