import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import { ListObjectsV2Command, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { PutRequest } from '../../src/deploy/object-store.js';
import { DirectS3, escapeKey } from '../../src/deploy/s3-direct.js';
import { S3Store } from '../../src/deploy/s3-store.js';
import { StopRequested, StoreRequestError, StoreUnresponsive, type RequestPolicy } from '../../src/deploy/store-requests.js';
import { BUCKET, CREDENTIALS, startLocalS3, type LocalS3 } from '../helpers/s3.js';
import { AWKWARD_KEYS, listThroughStore, putRequest, withEnvironment } from '../helpers/put-requests.js';
import { until } from '../helpers/until.js';

/**
 * The deploy's PUTs, signed and sent without the AWS SDK's command stack (src/deploy/s3-direct.ts):
 * addressed as the SDK addresses them, each key escaped once, signed as SigV4 says (checked here
 * by a verifier of the test's own: s3rver checks only the access key of a SigV4 request; Ceph's
 * gateway checks signatures and Content-MD5, test/deploy/radosgw-store.test.ts), stored with
 * their bytes and headers as the SDK reads them back, and failing as withTries expects an SDK
 * error to fail.
 */

const policy = (overrides: Partial<RequestPolicy> = {}): RequestPolicy => ({ tries: 1, timeoutMs: 10_000, stop: new AbortController().signal, ...overrides });

const KEYS = AWKWARD_KEYS.map((key) => `keys/${key}`);

/** The URL the SDK itself would PUT the object to (or, with `list`, ask a listing's page of) with this configuration (captured, never sent). */
async function sdkUrl(config: S3ClientConfig, bucket: string, key: string, list?: { prefix: string; token: string }): Promise<string> {
  let url = '';
  const client = new S3Client({
    ...config,
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
    maxAttempts: 1,
    requestHandler: {
      handle: async (request: { protocol: string; hostname: string; port?: number; path: string; query?: Record<string, string> }) => {
        // The SDK's `x-id` names the operation for its own sake; a store ignores it.
        const query = Object.entries(request.query ?? {})
          .filter(([name]) => name !== 'x-id')
          .map(([name, value]) => `${name}=${escapeKey(value).replace(/\//g, '%2F')}`)
          .sort()
          .join('&');
        url = `${request.protocol}//${request.hostname}${request.port === undefined ? '' : `:${request.port}`}${request.path}${query === '' ? '' : `?${query}`}`;
        throw new Error('captured, not sent');
      },
    } as unknown as S3ClientConfig['requestHandler'],
  });
  const command = list === undefined ? new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'x' }) : new ListObjectsV2Command({ Bucket: bucket, Prefix: list.prefix, ContinuationToken: list.token });
  await client.send(command as PutObjectCommand).catch(() => undefined);
  client.destroy();
  return url;
}

describe('the PUT as it goes on the wire', () => {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

  it('escapes each segment of a key once, keeping RFC 3986 unreserved characters and slashes', () => {
    expect(escapeKey("site/a b+c~d%e/ü/(x)*!'/")).toBe('site/a%20b%2Bc~d%25e/%C3%BC/%28x%29%2A%21%27/');
  });

  it('goes where the SDK sends a PutObject and a ListObjectsV2: virtual-hosted on AWS, path-style for a custom endpoint or a bucket DNS cannot name', async () => {
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
      const direct = (await DirectS3.open(client, bucket, 1))!;
      for (const key of KEYS) {
        const signed = await direct.sign(putRequest(key));
        const what = `${JSON.stringify(config)} ${bucket} ${key}`;
        expect(signed.url, what).toBe(`${base}${escapeKey(key)}`);
        expect(signed.url, what).toBe(await sdkUrl(config, bucket, key));
        // A listing's page goes to the bucket itself, its query the SDK's (in any order).
        const list = { prefix: key, token: `${key}+/=` };
        const listed = new URL((await direct.signList(list.prefix, list.token)).url);
        const sorted = `${listed.origin}${listed.pathname}?${listed.search.slice(1).split('&').sort().join('&')}`;
        expect(sorted, what).toBe(await sdkUrl(config, bucket, key, list));
      }
      direct.close();
      client.destroy();
    }
  });

  it('signs every header the store must not lose, the body by its SHA-256, and the session token', async () => {
    const client = new S3Client({ region: 'eu-west-3', credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'the-session-token' } });
    const direct = (await DirectS3.open(client, 'site', 1))!;
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
    const direct = (await DirectS3.open(client, 'site', 1))!;
    await expect(direct.sign(putRequest('keys/x', { metadata: { link: '<https://vidéos.example.org/>' } }))).rejects.toThrow(/metadata link holds characters other than printable US-ASCII/);
    direct.close();
    client.destroy();
  });
});

describe('S3Store.put against a store that records what it is sent', () => {
  let server: Server;
  let endpoint: string;
  const seen: Array<{ line: string; headers: IncomingMessage['headers']; body: Buffer }> = [];
  type Answer = { status: number; headers: Record<string, string>; body: string };
  let answer: Answer | ((url: string) => Answer) = { status: 200, headers: { etag: '"0123abcd"' }, body: '' };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        seen.push({ line: `${req.method} ${req.url} HTTP/${req.httpVersion}`, headers: req.headers, body: Buffer.concat(chunks) });
        const { status, headers, body } = typeof answer === 'function' ? answer(req.url ?? '') : answer;
        res.writeHead(status, headers);
        res.end(body);
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

  it('lists page after page, each GET signed, the continuation token sent back escaped', async () => {
    const token = 'a+b/c==';
    answer = (url) => ({
      status: 200,
      headers: { 'content-type': 'application/xml' },
      body: url.includes('continuation-token')
        ? listing([{ key: 'keys/c & d', etag: '"cc"', size: 3 }], null)
        : listing([{ key: 'keys/a', etag: '"aa"', size: 1 }, { key: 'keys/b<b>', etag: '"bb"', size: 2 }], token),
    });
    const listed = await listThroughStore(endpoint, BUCKET, 'keys/', CREDENTIALS, policy());
    expect(listed).toEqual([
      { key: 'keys/a', etag: 'aa', size: 1 },
      { key: 'keys/b<b>', etag: 'bb', size: 2 },
      { key: 'keys/c & d', etag: 'cc', size: 3 },
    ]);
    expect(seen.map((request) => request.line)).toEqual([
      'GET /site/?list-type=2&prefix=keys%2F HTTP/1.1',
      'GET /site/?list-type=2&prefix=keys%2F&continuation-token=a%2Bb%2Fc%3D%3D HTTP/1.1',
    ]);
    for (const request of seen) expect(signatureProblem(request, CREDENTIALS.AWS_SECRET_ACCESS_KEY), request.line).toBeNull();
  });

  it('refuses an answer to a listing that is no listing, or a truncated one without its token, and does not ask again', async () => {
    const list = (tries: number) =>
      withEnvironment(CREDENTIALS, async () => {
        const store = new S3Store({ target: { bucket: BUCKET, prefix: '' }, endpoint, policy: policy({ tries, backoffMs: 1 }) });
        try {
          for await (const object of store.list('keys/')) void object;
          return null;
        } catch (error) {
          return error;
        } finally {
          store.close();
        }
      });
    answer = { status: 200, headers: { 'content-type': 'text/html' }, body: '<html>a captive portal</html>' };
    expect(await list(2)).toMatchObject({ message: 'InvalidListing: the store answered the listing with something else than a ListBucketResult (HTTP 200)', transient: false });
    expect(seen).toHaveLength(1);
    answer = { status: 200, headers: {}, body: listing([{ key: 'keys/a', etag: '"aa"', size: 1 }], '') };
    expect(await list(1)).toMatchObject({ message: 'InvalidListing: the store answered a truncated listing without a continuation token (HTTP 200)' });
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

describe('S3Store.put and list against s3rver', () => {
  let s3: LocalS3;
  beforeAll(async () => {
    s3 = await startLocalS3();
  });
  afterAll(() => s3?.close());

  it('stores awkward keys with their bytes and headers, as the SDK reads them back, and lists them whole', async () => {
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
    const listed = await listThroughStore(s3.endpoint, BUCKET, 'keys/', CREDENTIALS, policy());
    expect(listed.map((o) => o.key).sort()).toEqual([...KEYS].sort());
    for (const request of requests) expect(listed.find((o) => o.key === request.key), request.key).toEqual({ key: request.key, etag: request.md5, size: request.body.byteLength });
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
  const required = ['host', 'x-amz-date', 'x-amz-content-sha256', ...(request.line.startsWith('PUT ') ? ['content-md5'] : [])];
  for (const name of required) if (!signed.includes(name)) return `${name} is not signed`;
  if (header('x-amz-content-sha256') !== createHash('sha256').update(request.body).digest('hex')) return 'x-amz-content-sha256 is not the SHA-256 of the body';
  const [method, target] = request.line.split(' ') as [string, string];
  const [path, query = ''] = target.split('?') as [string, string?];
  const uriEncode = (text: string) =>
    Array.from(Buffer.from(text, 'utf8'), (byte) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
  const canonicalPath = path.split('/').map((segment) => uriEncode(decodeURIComponent(segment))).join('/');
  const canonicalHeaders = signed.map((name) => `${name}:${header(name).trim().replace(/\s+/g, ' ')}\n`).join('');
  // The query's parameters sorted by name, each encoded as the path's segments are.
  const canonicalQuery = query
    .split('&')
    .filter((pair) => pair !== '')
    .map((pair) => pair.split('=').map((part) => uriEncode(decodeURIComponent(part))))
    .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0))
    .map(([name, value = '']) => `${name}=${value}`)
    .join('&');
  const canonical = [method, canonicalPath, canonicalQuery, canonicalHeaders, signedHeaders, header('x-amz-content-sha256')].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', header('x-amz-date'), scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  let key: Buffer = Buffer.from(`AWS4${secret}`);
  for (const part of [date, region, service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  return createHmac('sha256', key).update(toSign).digest('hex') === signature ? null : 'the signature differs';
}

/** A `ListObjectsV2` page as S3 writes it: values XML-escaped, ETags quoted; `next` null for the last page. */
function listing(objects: Array<{ key: string; etag: string; size: number }>, next: string | null): string {
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  const contents = objects
    .map((o) => `<Contents><Key>${escape(o.key)}</Key><LastModified>2026-11-29T12:00:00.000Z</LastModified><ETag>${escape(o.etag)}</ETag><Size>${o.size}</Size><StorageClass>STANDARD</StorageClass></Contents>`)
    .join('');
  const truncated = next === null ? '<IsTruncated>false</IsTruncated>' : `<IsTruncated>true</IsTruncated><NextContinuationToken>${escape(next)}</NextContinuationToken>`;
  return `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>site</Name><Prefix>keys/</Prefix><KeyCount>${objects.length}</KeyCount><MaxKeys>1000</MaxKeys>${truncated}${contents}</ListBucketResult>`;
}
