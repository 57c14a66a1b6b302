import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { ALL_ENCODINGS, type Encoding, isCompressible } from '../paths/compression.js';

/** What the server core answers; the HTTP layer only writes it. */
export interface ServeResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * A plain-text answer (errors, mostly). It carries `nosniff` itself, not only through `finish`:
 * the HTTP layer sends some (413 before the body is read, 500) without the core.
 */
export function textResponse(status: number, message: string, headers: Record<string, string> = {}): ServeResponse {
  return {
    status,
    headers: { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', ...headers },
    body: Buffer.from(`${message}\n`, 'utf8'),
  };
}

export function documentResponse(status: number, mediaType: string, body: string | Buffer, headers: Record<string, string> = {}): ServeResponse {
  return { status, headers: { 'Content-Type': mediaType, ...headers }, body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body };
}

/** Bodies smaller than this are sent as they are: gzip would not pay for its header. */
export const MIN_COMPRESS_BYTES = 256;

/**
 * The encodings a client takes, by Accept-Encoding (RFC 9110 section 12.5.3): a coding named with
 * a q above 0, or not named while `*` has one. `x-gzip` is gzip. The order is ours (the smaller
 * first), not the client's: every client that takes both gets brotli, as nginx's brotli module does.
 */
export function acceptedEncodings(acceptEncoding: string | undefined): Encoding[] {
  if (acceptEncoding === undefined) return [];
  const weights = new Map<string, number>();
  for (const item of acceptEncoding.split(',')) {
    const [rawCoding = '', ...params] = item.trim().toLowerCase().split(';');
    const coding = rawCoding.trim() === 'x-gzip' ? 'gzip' : rawCoding.trim();
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    weights.set(coding, Number.isFinite(q) ? q : 0);
  }
  const star = weights.get('*');
  return ALL_ENCODINGS.filter((encoding) => (weights.get(encoding) ?? star ?? 0) > 0);
}

/** Whether the client takes gzip. */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  return acceptedEncodings(acceptEncoding).includes('gzip');
}

/**
 * Whether an entity-tag list (If-Match, If-None-Match) names `etag`, compared as nginx compares
 * them (ngx_http_test_if_match): `*` matches anything; `weak` drops a `W/` on either side first.
 */
export function etagMatches(list: string | undefined, etag: string, weak = true): boolean {
  if (list === undefined) return false;
  if (list.trim() === '*') return true;
  const strip = (tag: string) => (weak ? tag.trim().replace(/^W\//, '') : tag.trim());
  return list.split(',').some((tag) => strip(tag) === strip(etag));
}

/** An HTTP date as whole seconds, or null for anything that is not a date (nginx: -1). */
function httpTime(value: string | undefined): number | null {
  if (value === undefined) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}

/**
 * The status a 200 becomes under the request's conditions, decided as nginx's not-modified
 * filter decides it, so that `vidfeeds serve` and the generated nginx configuration answer a
 * revalidating client alike: If-Unmodified-Since (412 unless the file is not newer; also 412 when
 * either date is unknown) and If-Match (412 unless it names the ETag, strongly); then 304 when
 * If-Modified-Since equals Last-Modified exactly (nginx's `if_modified_since exact`) and
 * If-None-Match names the ETag (weakly), each where sent.
 */
export function conditionalStatus(
  request: { ifModifiedSince?: string; ifUnmodifiedSince?: string; ifMatch?: string; ifNoneMatch?: string },
  response: { etag: string; lastModified: number | null },
): 200 | 304 | 412 {
  const { ifModifiedSince, ifUnmodifiedSince, ifMatch, ifNoneMatch } = request;
  if (ifUnmodifiedSince !== undefined) {
    const since = httpTime(ifUnmodifiedSince);
    if (response.lastModified === null || since === null || since < response.lastModified) return 412;
  }
  if (ifMatch !== undefined && !etagMatches(ifMatch, response.etag, false)) return 412;
  if (ifModifiedSince === undefined && ifNoneMatch === undefined) return 200;
  if (ifModifiedSince !== undefined && (response.lastModified === null || httpTime(ifModifiedSince) !== response.lastModified)) return 200;
  if (ifNoneMatch !== undefined && !etagMatches(ifNoneMatch, response.etag)) return 200;
  return 304;
}

/**
 * What every 200 goes through, as a web server would: an ETag from the bytes, the conditions of
 * the request (`conditionalStatus`: 304, 412), gzip when the client takes it (the ETag then names
 * the gzip bytes), Vary on compressible types, and HEAD without a body but with the length GET
 * would have. A body that comes compressed already (a pre-compressed file: Content-Encoding set)
 * is sent as it is, its ETag naming its encoding. A file's answer carries its Last-Modified.
 */
export function finish(response: ServeResponse, request: { method: string; headers: Record<string, string | string[] | undefined> }): ServeResponse {
  const headers: Record<string, string> = { 'X-Content-Type-Options': 'nosniff', ...response.headers };
  const header = (name: string) => {
    const value = request.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  let body = response.body;
  if (response.status === 200) {
    const type = headers['Content-Type'] ?? '';
    const compressible = isCompressible(type);
    if (compressible) headers.Vary = 'Accept-Encoding';
    const hash = createHash('sha1').update(body).digest('base64url').slice(0, 22);
    const encoded = headers['Content-Encoding'];
    if (encoded !== undefined) {
      headers.ETag = `"${hash}-${encoded}"`;
    } else if (compressible && body.length >= MIN_COMPRESS_BYTES && acceptsGzip(header('accept-encoding'))) {
      body = gzipSync(body);
      headers['Content-Encoding'] = 'gzip';
      headers.ETag = `"${hash}-gzip"`;
    } else {
      headers.ETag = `"${hash}"`;
    }
    const status = conditionalStatus(
      { ifModifiedSince: header('if-modified-since'), ifUnmodifiedSince: header('if-unmodified-since'), ifMatch: header('if-match'), ifNoneMatch: header('if-none-match') },
      { etag: headers.ETag, lastModified: httpTime(headers['Last-Modified']) },
    );
    if (status === 412) return finish(textResponse(412, 'a precondition of the request does not hold'), request);
    if (status === 304) {
      // RFC 9110 section 15.4.5: what a 200 would have said about caching.
      const kept: Record<string, string> = { 'X-Content-Type-Options': 'nosniff', ETag: headers.ETag };
      for (const name of ['Last-Modified', 'Vary', 'Cache-Control']) if (headers[name] !== undefined) kept[name] = headers[name];
      return { status: 304, headers: kept, body: Buffer.alloc(0) };
    }
  }
  headers['Content-Length'] = String(body.length);
  return { status: response.status, headers, body: request.method === 'HEAD' ? Buffer.alloc(0) : body };
}
