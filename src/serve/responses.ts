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

/** Whether an If-None-Match header matches `etag` (weak comparison, RFC 9110 section 13.1.2). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((tag) => opaque(tag) === opaque(etag));
}

/**
 * What every 200 goes through, as a web server would: an ETag from the bytes, 304 when the client
 * has them, gzip when the client takes it (the ETag then names the gzip bytes), Vary on
 * compressible types, and HEAD without a body but with the length GET would have. A body that
 * comes compressed already (a pre-compressed file: Content-Encoding set) is sent as it is, its
 * ETag naming its encoding.
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
    if (etagMatches(header('if-none-match'), headers.ETag)) {
      // RFC 9110 section 15.4.5: what a 200 would have said about caching.
      const kept: Record<string, string> = { ETag: headers.ETag };
      if (headers.Vary !== undefined) kept.Vary = headers.Vary;
      if (headers['Cache-Control'] !== undefined) kept['Cache-Control'] = headers['Cache-Control'];
      return { status: 304, headers: kept, body: Buffer.alloc(0) };
    }
  }
  headers['Content-Length'] = String(body.length);
  return { status: response.status, headers, body: request.method === 'HEAD' ? Buffer.alloc(0) : body };
}
