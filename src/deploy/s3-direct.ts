import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getEndpointFromInstructions } from '@smithy/core/endpoints';
import { SignatureV4 } from '@smithy/signature-v4';
import { decodeXML } from 'entities';
import type { PutRequest, StoredObject } from './object-store.js';

/**
 * A deploy's uploads, one PUT per object, and its listing of the store, sent without the AWS SDK's
 * command stack. Through the SDK each `PutObject` resolves its middleware stack, endpoint rules and
 * signer anew, some 250 KB of garbage per object (docs/performance.md, "Deploy memory"), and a
 * first deploy sends hundreds of thousands; each page of a `ListObjectsV2` goes through its
 * general XML deserialiser, which took longer than reading and hashing the files it lists. What
 * the SDK decides once per client is still the SDK's: the endpoint (its own
 * rules, asked once: AWS virtual-hosted or path-style addressing, partitions, FIPS and dual-stack
 * settings, a custom endpoint), the credentials (the client's provider, which caches and
 * refreshes them), the region (the client's provider), the clock offset it has learnt. Each request
 * is then signed by `SignatureV4` of `@smithy/signature-v4`, the SDK's own SigV4 signer, and sent
 * with node:http(s) on a keep-alive agent of its own.
 *
 * Errors are shaped as the SDK's are for src/deploy/store-requests.ts: `name` and `Code` the
 * store's error code, `$metadata.httpStatusCode`; a connection's failure is Node's own error
 * (`code` ECONNRESET, ECONNREFUSED...), as the SDK passes it on.
 */

/** Where the PUTs go, as the SDK's endpoint rules resolved it for the bucket. */
export interface PutTarget {
  protocol: 'http:' | 'https:';
  hostname: string;
  /** '' for the protocol's default. */
  port: string;
  /** The endpoint's path without a final slash: '' (virtual-hosted) or `/BUCKET` (path-style), after any path of the endpoint. */
  basePath: string;
  signingName: string;
  signingRegion: string;
}

/** A request as it goes on the wire: its URL and headers, signed. */
export interface SignedRequest {
  url: string;
  path: string;
  headers: Record<string, string>;
}

/** One page of a listing: the objects, in the order listed, and the token of the next page, if any. */
export interface ListPage {
  objects: StoredObject[];
  next: string | undefined;
}

/** The store's refusal of a request (or an answer that is no answer): what the SDK's S3ServiceException would carry. */
export class S3AnswerError extends Error {
  readonly Code: string | undefined;
  readonly $metadata: { httpStatusCode: number; requestId?: string; extendedRequestId?: string };
  readonly $fault: 'client' | 'server';

  constructor(status: number, code: string | undefined, message: string | undefined, ids: { requestId?: string; extendedRequestId?: string }) {
    // With no code, the status stands for it (describeStoreError then says "HTTP 503"); with a code
    // and no message (Ceph's), the message is the code, which describeStoreError leaves out.
    super(message ?? code ?? `HTTP ${status}`);
    this.name = code ?? `HTTP ${status}`;
    this.Code = code;
    this.$metadata = { httpStatusCode: status, ...ids };
    this.$fault = status >= 500 ? 'server' : 'client';
  }
}

/** The part of the client this module uses: its resolved configuration. */
type ClientConfig = S3Client['config'];

export class DirectS3 {
  private readonly agent: HttpAgent | HttpsAgent;
  private readonly signer: SignatureV4;

  private constructor(
    readonly target: PutTarget,
    private readonly config: ClientConfig,
    maxSockets: number,
  ) {
    const agentOptions = { keepAlive: true, maxSockets };
    this.agent = target.protocol === 'https:' ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
    this.signer = new SignatureV4({
      service: target.signingName,
      region: target.signingRegion,
      // The client's provider, called per request: it caches the credentials and refreshes them before they expire.
      credentials: () => config.credentials(),
      sha256: NodeSha256,
      // S3's canonical path is the path as sent, each key segment escaped once (the SDK's `signingEscapePath: false`).
      uriEscapePath: false,
      // x-amz-content-sha256 is set below, from the body's SHA-256.
      applyChecksum: false,
    });
  }

  /**
   * The requests of `bucket` through `client`'s endpoint, credentials and region, or null when the
   * SDK's rules sign the bucket's requests otherwise than with plain SigV4 (an S3 Express
   * directory bucket's sessions): those requests are then the SDK's.
   */
  static async open(client: S3Client, bucket: string, maxSockets: number): Promise<DirectS3 | null> {
    const target = await resolvePutTarget(client, bucket);
    return target === null ? null : new DirectS3(target, client.config, maxSockets);
  }

  /** The request of `request`, signed now, as it is sent (also what the tests look at). */
  async sign(request: PutRequest): Promise<SignedRequest & { body: Uint8Array }> {
    const { target } = this;
    const path = `${target.basePath}/${escapeKey(request.key)}`;
    const host = target.port === '' ? target.hostname : `${target.hostname}:${target.port}`;
    const headers: Record<string, string> = {
      host,
      'content-type': request.contentType,
      'content-length': String(request.body.byteLength),
      'content-md5': Buffer.from(request.md5, 'hex').toString('base64'),
      'cache-control': request.cacheControl,
      'x-amz-content-sha256': createHash('sha256').update(request.body).digest('hex'),
    };
    if (request.contentEncoding !== undefined) headers['content-encoding'] = request.contentEncoding;
    for (const [name, value] of Object.entries(request.metadata)) headers[`x-amz-meta-${name.toLowerCase()}`] = metadataValue(name, value);
    const signed = await this.signer.sign(
      { method: 'PUT', protocol: target.protocol, hostname: target.hostname, ...(target.port === '' ? {} : { port: Number(target.port) }), path, query: {}, headers, body: request.body },
      // The offset the SDK has learnt from the store's clock, if any (a skewed local clock).
      { signingDate: new Date(Date.now() + (this.config.systemClockOffset ?? 0)) },
    );
    return { url: `${target.protocol}//${host}${path}`, path, headers: signed.headers, body: request.body };
  }

  /** Stores the object; resolves with its ETag, unquoted. `signal` aborts the request and closes its connection. */
  async put(request: PutRequest, signal: AbortSignal): Promise<string> {
    const signed = await this.sign(request);
    signal.throwIfAborted();
    const answer = await this.send('PUT', signed, signal);
    return unquote(answer.etag);
  }

  /**
   * One page of `ListObjectsV2` of the keys under `prefix`, after the page whose token is `token`.
   * Keys come as the store lists them (no `encoding-type`, as the SDK asks), XML-decoded.
   */
  async listPage(prefix: string, token: string | undefined, signal: AbortSignal): Promise<ListPage> {
    const signed = await this.signList(prefix, token);
    signal.throwIfAborted();
    return parseListPage((await this.send('GET', signed, signal)).body);
  }

  /** The GET of a listing's page, signed now, as it is sent. */
  async signList(prefix: string, token: string | undefined): Promise<SignedRequest> {
    const { target } = this;
    const query: Record<string, string> = { 'list-type': '2', prefix };
    if (token !== undefined) query['continuation-token'] = token;
    const search = Object.entries(query)
      .map(([name, value]) => `${name}=${escapeSegment(value)}`)
      .join('&');
    // The bucket's own path, as the SDK writes it: `/BUCKET/` path-style, `/` virtual-hosted.
    const path = `${target.basePath}/`;
    const host = target.port === '' ? target.hostname : `${target.hostname}:${target.port}`;
    const signed = await this.signer.sign(
      { method: 'GET', protocol: target.protocol, hostname: target.hostname, ...(target.port === '' ? {} : { port: Number(target.port) }), path, query, headers: { host, 'x-amz-content-sha256': EMPTY_SHA256 } },
      { signingDate: new Date(Date.now() + (this.config.systemClockOffset ?? 0)) },
    );
    return { url: `${target.protocol}//${host}${path}?${search}`, path: `${path}?${search}`, headers: signed.headers };
  }

  /** Closes the agent's connections (those of requests still under way too). */
  close(): void {
    this.agent.destroy();
  }

  /** Sends a signed request; resolves with the answer's ETag and body when the store did what was asked. */
  private send(method: 'PUT' | 'GET', signed: SignedRequest & { body?: Uint8Array }, signal: AbortSignal): Promise<{ etag: string | undefined; body: Buffer }> {
    const { target } = this;
    return new Promise((resolve, reject) => {
      const options = {
        method,
        protocol: target.protocol,
        // An IPv6 address without the brackets of its URL form.
        hostname: target.hostname.replace(/^\[(.*)\]$/, '$1'),
        ...(target.port === '' ? {} : { port: Number(target.port) }),
        path: signed.path,
        headers: signed.headers as OutgoingHttpHeaders,
        agent: this.agent,
        // Aborting destroys the request and its socket (Node's `signal` option).
        signal,
      };
      const onAnswer = (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let length = 0;
        const ok = response.statusCode !== undefined && response.statusCode >= 200 && response.statusCode < 300;
        response.on('data', (chunk: Buffer) => {
          // A listing is kept whole; an error document is small, and the rest of a long answer to a
          // PUT is read and dropped, so the connection can serve again.
          if ((ok && method === 'GET') || length < MAX_ANSWER_BYTES) chunks.push(chunk);
          length += chunk.length;
        });
        response.on('error', reject);
        // A connection closed before the answer ended (a reset, or the try aborted): no 'end' comes.
        response.on('close', () => {
          if (!response.complete) reject(connectionReset());
        });
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          const body = Buffer.concat(chunks);
          // A 2xx answer whose body is an S3 error document is a failure (the SDK's rule: a 503).
          const failed = status < 200 || status >= 300 || body.subarray(-64).toString('utf8').trimEnd().endsWith('</Error>');
          if (!failed) {
            resolve({ etag: headerValue(response.headers.etag), body });
            return;
          }
          reject(
            new S3AnswerError(status >= 200 && status < 300 ? 503 : status, elementText(body, 'Code'), elementText(body, 'Message'), {
              ...optional('requestId', headerValue(response.headers['x-amz-request-id']) ?? elementText(body, 'RequestId')),
              ...optional('extendedRequestId', headerValue(response.headers['x-amz-id-2']) ?? elementText(body, 'HostId')),
            }),
          );
        });
      };
      let outgoing: ClientRequest;
      try {
        outgoing = target.protocol === 'https:' ? httpsRequest(options, onAnswer) : httpRequest(options, onAnswer);
      } catch (error) {
        reject(error);
        return;
      }
      outgoing.on('error', reject);
      outgoing.end(signed.body);
    });
  }
}

/** The most of an answer's body kept to read its error code and message. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The endpoint of the bucket's PutObject by the SDK's own rules, with the client's configuration; null unless plain SigV4 signs it. */
async function resolvePutTarget(client: S3Client, bucket: string): Promise<PutTarget | null> {
  const endpoint = await getEndpointFromInstructions({ Bucket: bucket, Key: 'k' }, PutObjectCommand, client.config);
  const schemes = (endpoint.properties?.authSchemes ?? []) as Array<{ name?: string; signingName?: string; signingRegion?: string }>;
  const scheme = schemes[0];
  if (scheme !== undefined && scheme.name !== 'sigv4') return null;
  if (endpoint.headers !== undefined && Object.keys(endpoint.headers).length > 0) return null;
  const url = endpoint.url;
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.search !== '') return null;
  return {
    protocol: url.protocol,
    hostname: url.hostname,
    port: url.port,
    basePath: url.pathname.replace(/\/+$/, ''),
    signingName: scheme?.signingName ?? 's3',
    signingRegion: scheme?.signingRegion ?? (await client.config.region()),
  };
}

/**
 * A key as S3 reads it in a path: each segment percent-encoded but for RFC 3986's unreserved
 * characters, slashes kept (the SDK's `{Key+}`: encodeURIComponent, and `!'()*` too).
 */
export function escapeKey(key: string): string {
  return key.split('/').map(escapeSegment).join('/');
}

/** Text percent-encoded but for RFC 3986's unreserved characters, as SigV4's canonical request has it. */
function escapeSegment(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The SHA-256 of no bytes: the payload hash of a request without a body. */
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/**
 * A `ListBucketResult`: each `<Contents>`'s key, size and ETag, and the next page's token when the
 * listing is truncated. A page without `<ListBucketResult>` is no listing (an answer from
 * something else than the store). Read from the bytes one `<Contents>` at a time, each decoded
 * alone: the elements S3 writes there are flat, so four searches read them, where the SDK's
 * general XML deserialiser cost more CPU than hashing the files the listing names.
 */
export function parseListPage(body: Buffer): ListPage {
  if (body.indexOf('<ListBucketResult') === -1) throw invalidListing('the store answered the listing with something else than a ListBucketResult');
  const objects: StoredObject[] = [];
  for (let at = body.indexOf(CONTENTS_OPEN); at !== -1; ) {
    const end = body.indexOf(CONTENTS_CLOSE, at);
    if (end === -1) throw invalidListing('the store answered a listing that ends inside a <Contents> element');
    const contents = body.toString('utf8', at + CONTENTS_OPEN.length, end);
    const key = KEY.exec(contents)?.[1];
    if (key !== undefined && key !== '') {
      objects.push({ key: xmlText(key), etag: unquote(xmlText(ETAG.exec(contents)?.[1] ?? '')), size: Number(SIZE.exec(contents)?.[1] ?? 0) });
    }
    at = body.indexOf(CONTENTS_OPEN, end);
  }
  const truncated = elementText(body, 'IsTruncated') === 'true';
  const next = truncated ? elementText(body, 'NextContinuationToken') : undefined;
  if (truncated && next === undefined) throw invalidListing('the store answered a truncated listing without a continuation token');
  return { objects, next };
}

/** A listing that cannot be read, answered with a success status: not tried again (the store would answer it alike). */
function invalidListing(message: string): S3AnswerError {
  return new S3AnswerError(200, 'InvalidListing', message, {});
}

const CONTENTS_OPEN = '<Contents>';
const CONTENTS_CLOSE = '</Contents>';
const KEY = /<Key>([^<]*)<\/Key>/;
const ETAG = /<ETag>([^<]*)<\/ETag>/;
const SIZE = /<Size>\s*(\d+)\s*<\/Size>/;

/** The text of the first `<name>` element of an answer (a listing, an error document), XML-decoded and trimmed; undefined when there is none or it is empty. */
function elementText(body: Buffer, name: string): string | undefined {
  const start = body.indexOf(`<${name}>`);
  if (start === -1) return undefined;
  const end = body.indexOf(`</${name}>`, start);
  if (end === -1) return undefined;
  const value = xmlText(body.toString('utf8', start + name.length + 2, end)).trim();
  return value === '' ? undefined : value;
}

/** XML character data as text: entities and character references decoded (most keys have none). */
function xmlText(raw: string): string {
  return raw.includes('&') ? decodeXML(raw) : raw;
}

/**
 * A metadata value as a header: S3's REST API takes US-ASCII only (AWS documents it; the SDK would
 * send other characters as Latin-1 bytes it signed as UTF-8, and the store refuse the signature).
 */
function metadataValue(name: string, value: string): string {
  if (/[^\x20-\x7e]/.test(value)) {
    throw new MetadataNotAscii(`the metadata ${name} holds characters other than printable US-ASCII, which S3 metadata cannot carry: ${JSON.stringify(value)}`);
  }
  return value;
}

/** Metadata a PUT cannot carry: refused before anything is sent (not tried again). */
export class MetadataNotAscii extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidMetadata';
  }
}

/** SHA-256 (or HMAC-SHA256 with a key) from node:crypto, as SignatureV4 asks for it. */
class NodeSha256 {
  private hash: Hash | Hmac;

  constructor(private readonly secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = NodeSha256.make(secret);
  }

  private static make(secret: string | ArrayBuffer | ArrayBufferView | undefined): Hash | Hmac {
    if (secret === undefined) return createHash('sha256');
    const key = typeof secret === 'string' ? secret : ArrayBuffer.isView(secret) ? new Uint8Array(secret.buffer, secret.byteOffset, secret.byteLength) : new Uint8Array(secret);
    return createHmac('sha256', key);
  }

  update(data: Uint8Array): void {
    this.hash.update(data);
  }

  digest(): Promise<Uint8Array> {
    const digest = this.hash.digest();
    return Promise.resolve(new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength));
  }

  reset(): void {
    this.hash = NodeSha256.make(this.secret);
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

function connectionReset(): Error {
  return Object.assign(new Error('the store closed the connection before its answer ended'), { code: 'ECONNRESET' });
}

export function unquote(etag: string | undefined): string {
  return (etag ?? '').replace(/^W\//, '').replace(/^"|"$/g, '');
}
