import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import { PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { PutRequest } from '../../src/deploy/object-store.js';
import { DirectPut, escapeKey } from '../../src/deploy/s3-put.js';
import { S3Store } from '../../src/deploy/s3-store.js';
import { StopRequested, StoreRequestError, StoreUnresponsive, type RequestPolicy } from '../../src/deploy/store-requests.js';
import { BUCKET, CREDENTIALS, startLocalS3, type LocalS3 } from '../helpers/s3.js';
import { AWKWARD_KEYS, putRequest, withEnvironment } from '../helpers/put-requests.js';
import { until } from '../helpers/until.js';

/**
 * The deploy's PUTs, signed and sent without the AWS SDK's command stack (src/deploy/s3-put.ts):
 * addressed as the SDK addresses them, each key escaped once, signed as SigV4 says (checked here
 * by a verifier of the test's own: s3rver checks only the access key of a SigV4 request; Ceph's
 * gateway checks signatures and Content-MD5, test/deploy/radosgw-store.test.ts), stored with
 * their bytes and headers as the SDK reads them back, and failing as withTries expects an SDK
 * error to fail.
 */

const policy = (overrides: Partial<RequestPolicy> = {}): RequestPolicy => ({ tries: 1, timeoutMs: 10_000, stop: new AbortController().signal, ...overrides });

const KEYS = AWKWARD_KEYS.map((key) => `keys/${key}`);

/** The URL the SDK itself would PUT the object to with this configuration (captured, never sent). */
async function sdkUrl(config: S3ClientConfig, bucket: string, key: string): Promise<string> {
  let url = '';
  const client = new S3Client({
    ...config,
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
    maxAttempts: 1,
    requestHandler: {
      handle: async (request: { protocol: string; hostname: string; port?: number; path: string }) => {
        url = `${request.protocol}//${request.hostname}${request.port === undefined ? '' : `:${request.port}`}${request.path}`;
        throw new Error('captured, not sent');
      },
    } as unknown as S3ClientConfig['requestHandler'],
  });
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'x' })).catch(() => undefined);
  client.destroy();
  return url;
}

describe('the PUT as it goes on the wire', () => {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

  it('escapes each segment of a key once, keeping RFC 3986 unreserved characters and slashes', () => {
    expect(escapeKey("site/a b+c~d%e/ü/(x)*!'/")).toBe('site/a%20b%2Bc~d%25e/%C3%BC/%28x%29%2A%21%27/');
  });

  it('goes where the SDK sends a PutObject: virtual-hosted on AWS, path-style for a custom endpoint or a bucket DNS cannot name', async () => {
    const cases: Array<[S3ClientConfig, string, string]> = [
      [{ region: 'eu-west-3' }, 'site', 'https://site.s3.eu-west-3.amazonaws.com/'],
      [{ region: 'us-east-1' }, 'site', 'https://site.s3.us-east-1.amazonaws.com/'],
      [{ region: 'eu-west-3' }, 'my.site', 'https://s3.eu-west-3.amazonaws.com/my.site/'],
      [{ region: 'eu-west-3' }, 'My_Site', 'https://s3.eu-west-3.amazonaws.com/My_Site/'],
      [{ region: 'cn-north-1' }, 'site', 'https://site.s3.cn-north-1.amazonaws.com.cn/'],
      [{ region: 'us-east-1', endpoint: 'http://127.0.0.1:9000', forcePathStyle: true }, 'site', 'http://127.0.0.1:9000/site/'],
      [{ region: 'us-east-1', endpoint: 'https://store.example.net/base/', forcePathStyle: true }, 'my.site', 'https://store.example.net/base/my.site/'],
    ];
    for (const [config, bucket, base] of cases) {
      const client = new S3Client({ ...config, credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' } });
      const direct = (await DirectPut.open(client, bucket, 1))!;
      for (const key of KEYS) {
        const signed = await direct.sign(putRequest(key));
        const what = `${JSON.stringify(config)} ${bucket} ${key}`;
        expect(signed.url, what).toBe(`${base}${escapeKey(key)}`);
        expect(signed.url, what).toBe(await sdkUrl(config, bucket, key));
      }
      direct.close();
      client.destroy();
    }
  });

  it('signs every header the store must not lose, the body by its SHA-256, and the session token', async () => {
    const client = new S3Client({ region: 'eu-west-3', credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'the-session-token' } });
    const direct = (await DirectPut.open(client, 'site', 1))!;
    const request = putRequest('keys/a b', { contentEncoding: 'gzip' });
    const { headers } = await direct.sign(request);
    expect(headers['x-amz-content-sha256']).toBe(createHash('sha256').update(request.body).digest('hex'));
    expect(headers['content-md5']).toBe(Buffer.from(request.md5, 'hex').toString('base64'));
    expect(headers['content-length']).toBe(String(request.body.byteLength));
    expect(headers['x-amz-security-token']).toBe('the-session-token');
    expect(headers['x-amz-meta-link']).toBe(request.metadata.link);
    expect(headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-3\/s3\/aws4_request, SignedHeaders=content-encoding;content-length;content-md5;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-link;x-amz-meta-vidfeeds-sha256;x-amz-security-token, Signature=[0-9a-f]{64}$/,
    );
    direct.close();
    client.destroy();
  });

  it('refuses metadata S3 cannot carry, before sending anything', async () => {
    const client = new S3Client({ region: 'eu-west-3', credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' } });
    const direct = (await DirectPut.open(client, 'site', 1))!;
    await expect(direct.sign(putRequest('keys/x', { metadata: { link: '<https://vidéos.example.org/>' } }))).rejects.toThrow(/metadata link holds characters other than printable US-ASCII/);
    direct.close();
    client.destroy();
  });
});

describe('S3Store.put against a store that records what it is sent', () => {
  let server: Server;
  let endpoint: string;
  const seen: Array<{ line: string; headers: IncomingMessage['headers']; body: Buffer }> = [];
  let answer: { status: number; headers: Record<string, string>; body: string } = { status: 200, headers: { etag: '"0123abcd"' }, body: '' };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        seen.push({ line: `${req.method} ${req.url} HTTP/${req.httpVersion}`, headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  afterEach(() => {
    seen.length = 0;
    answer = { status: 200, headers: { etag: '"0123abcd"' }, body: '' };
  });

  const put = (request: PutRequest, tries = 1) =>
    withEnvironment(CREDENTIALS, async () => {
      const store = new S3Store({ target: { bucket: BUCKET, prefix: '' }, endpoint, policy: policy({ tries, backoffMs: 1 }) });
      try {
        return await store.put(request);
      } finally {
        store.close();
      }
    });

  it('sends the key escaped once in a path-style request line, with the body, and answers the unquoted ETag', async () => {
    const request = putRequest('keys/a b+c~d%e/ünï/(x)!');
    expect(await put(request)).toBe('0123abcd');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.line).toBe('PUT /site/keys/a%20b%2Bc~d%25e/%C3%BCn%C3%AF/%28x%29%21 HTTP/1.1');
    expect(signatureProblem(seen[0]!, CREDENTIALS.AWS_SECRET_ACCESS_KEY)).toBeNull();
    expect(seen[0]!.body.equals(request.body)).toBe(true);
    expect(seen[0]!.headers).toMatchObject({
      host: endpoint.slice('http://'.length),
      'content-type': request.contentType,
      'cache-control': request.cacheControl,
      'content-md5': Buffer.from(request.md5, 'hex').toString('base64'),
      'x-amz-meta-vidfeeds-sha256': request.metadata['vidfeeds-sha256'],
      'x-amz-meta-link': request.metadata.link,
    });
    expect(seen[0]!.headers['content-encoding']).toBeUndefined();
    expect(seen[0]!.headers['transfer-encoding']).toBeUndefined();
  });

  it('signs each awkward key as a store computes the signature from the key it reads', async () => {
    for (const key of KEYS) await put(putRequest(key, { contentEncoding: 'gzip' }));
    expect(seen.map((request) => request.line)).toEqual(KEYS.map((key) => `PUT /site/${escapeKey(key)} HTTP/1.1`));
    for (const request of seen) expect(signatureProblem(request, CREDENTIALS.AWS_SECRET_ACCESS_KEY), request.line).toBeNull();
    expect(signatureProblem(seen[0]!, 'another secret')).toBe('the signature differs');
  });

  it('names the store code and the HTTP status of a refusal, with or without a message, and tries again only what may pass later', async () => {
    answer = { status: 403, headers: { 'content-type': 'application/xml' }, body: '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><RequestId>tx1</RequestId></Error>' };
    const denied = await put(putRequest('keys/denied'), 3).catch((error: unknown) => error);
    expect(denied).toBeInstanceOf(StoreRequestError);
    expect(denied).toMatchObject({ message: 'AccessDenied (HTTP 403)', transient: false, status: 403, code: 'AccessDenied' });
    expect(seen).toHaveLength(1);

    answer = { status: 503, headers: {}, body: '' };
    const bare = await put(putRequest('keys/bare'), 2).catch((error: unknown) => error);
    expect(bare).toMatchObject({ message: 'HTTP 503, after 2 tries', transient: true, status: 503, code: 'HTTP 503' });
    expect(seen).toHaveLength(3);

    answer = { status: 500, headers: {}, body: '<Error><Code>InternalError</Code><Message>We encountered an internal error &amp; stopped.</Message></Error>' };
    const internal = await put(putRequest('keys/internal')).catch((error: unknown) => error);
    expect(internal).toMatchObject({ message: 'InternalError: We encountered an internal error & stopped. (HTTP 500)', transient: true });

    // S3 can answer 200 and fail in the body: the SDK counts it a 503.
    answer = { status: 200, headers: {}, body: '<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>' };
    const slow = await put(putRequest('keys/slow')).catch((error: unknown) => error);
    expect(slow).toMatchObject({ message: 'SlowDown: Please reduce your request rate. (HTTP 503)', transient: true, status: 503 });
  });
});

describe('S3Store.put against a store that never answers', () => {
  let silent: ReturnType<typeof createNetServer>;
  let endpoint: string;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    silent = createNetServer((socket) => {
      sockets.push(socket);
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it('closes the connection of a try past its deadline, and of one under way when the deploy stops', async () => {
    await withEnvironment(CREDENTIALS, async () => {
      const stop = new AbortController();
      const store = new S3Store({ target: { bucket: BUCKET, prefix: '' }, endpoint, policy: policy({ tries: 3, timeoutMs: 300, stop: stop.signal }) });
      try {
        await expect(store.put(putRequest('keys/late'))).rejects.toBeInstanceOf(StoreUnresponsive);
        expect(sockets).toHaveLength(1);
        expect(await until(() => sockets[0]!.closed, 5_000)).toBe(true);

        const stopped = store.put(putRequest('keys/stopped'));
        expect(await until(() => sockets.length === 2, 5_000)).toBe(true);
        stop.abort();
        await expect(stopped).rejects.toBeInstanceOf(StopRequested);
        expect(await until(() => sockets[1]!.closed, 5_000)).toBe(true);
      } finally {
        store.close();
      }
    });
  });
});

describe('S3Store.put against s3rver', () => {
  let s3: LocalS3;
  beforeAll(async () => {
    s3 = await startLocalS3();
  });
  afterAll(() => s3?.close());

  it('stores awkward keys with their bytes and headers, as the SDK reads them back', async () => {
    const requests = KEYS.map((key, i) => putRequest(key, i % 2 === 0 ? { contentEncoding: 'gzip' } : {}));
    await withEnvironment(CREDENTIALS, async () => {
      const store = new S3Store({ target: { bucket: BUCKET, prefix: '' }, endpoint: s3.endpoint, policy: policy(), concurrency: 4 });
      try {
        const etags = await Promise.all(requests.map((request) => store.put(request)));
        expect(etags).toEqual(requests.map((request) => request.md5));
      } finally {
        store.close();
      }
    });
    expect((await s3.keys()).filter((key) => key.startsWith('keys/'))).toEqual([...KEYS].sort());
    for (const request of requests) {
      const stored = await s3.get(request.key);
      expect(stored.body.equals(request.body), request.key).toBe(true);
      expect(stored, request.key).toMatchObject({ contentType: request.contentType, cacheControl: request.cacheControl, contentEncoding: request.contentEncoding, metadata: request.metadata });
    }
  });

  it('is refused with the store code of an unknown access key, and not tried again', async () => {
    const unknown = await withEnvironment({ ...CREDENTIALS, AWS_ACCESS_KEY_ID: 'NOBODY' }, async () => {
      const store = new S3Store({ target: { bucket: BUCKET, prefix: '' }, endpoint: s3.endpoint, policy: policy({ tries: 3 }) });
      return store.put(putRequest('keys/unsigned')).catch((error: unknown) => error).finally(() => store.close());
    });
    expect(unknown).toBeInstanceOf(StoreRequestError);
    expect(unknown).toMatchObject({ status: 403, code: 'InvalidAccessKeyId', transient: false });
    expect((unknown as Error).message).toMatch(/^InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records\. \(HTTP 403\)$/);
    expect(s3.log.filter((r) => r.key === 'keys/unsigned')).toHaveLength(1);
  });
});

/**
 * What a store finds wrong with a request's SigV4 signature (AWS's "Signature Version 4 for
 * S3"), or null: computed from the request as it arrived, the canonical path made from the key
 * the store reads (each segment decoded, then encoded with only A-Z a-z 0-9 - . _ ~ kept), so
 * a key escaped otherwise than S3 expects fails as it would on AWS.
 */
function signatureProblem(request: { line: string; headers: IncomingMessage['headers']; body: Buffer }, secret: string): string | null {
  const header = (name: string) => String(request.headers[name] ?? '');
  const auth = /^AWS4-HMAC-SHA256 Credential=[^/]+\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(header('authorization'));
  if (auth === null) return `no SigV4 authorization: ${header('authorization')}`;
  const [, date, region, service, signedHeaders, signature] = auth as unknown as [string, string, string, string, string, string];
  const signed = signedHeaders.split(';');
  for (const required of ['host', 'x-amz-date', 'x-amz-content-sha256', 'content-md5']) if (!signed.includes(required)) return `${required} is not signed`;
  if (header('x-amz-content-sha256') !== createHash('sha256').update(request.body).digest('hex')) return 'x-amz-content-sha256 is not the SHA-256 of the body';
  const [method, target] = request.line.split(' ') as [string, string];
  const [path, query = ''] = target.split('?') as [string, string?];
  const uriEncode = (text: string) =>
    Array.from(Buffer.from(text, 'utf8'), (byte) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
  const canonicalPath = path.split('/').map((segment) => uriEncode(decodeURIComponent(segment))).join('/');
  const canonicalHeaders = signed.map((name) => `${name}:${header(name).trim().replace(/\s+/g, ' ')}\n`).join('');
  const canonical = [method, canonicalPath, query, canonicalHeaders, signedHeaders, header('x-amz-content-sha256')].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', header('x-amz-date'), scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  let key: Buffer = Buffer.from(`AWS4${secret}`);
  for (const part of [date, region, service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  return createHmac('sha256', key).update(toSign).digest('hex') === signature ? null : 'the signature differs';
}
