import { createHash } from 'node:crypto';
import type { PutRequest, StoredObject } from '../../src/deploy/object-store.js';
import { S3Store } from '../../src/deploy/s3-store.js';
import type { RequestPolicy } from '../../src/deploy/store-requests.js';

/**
 * Objects for the tests of the deploy's own PUTs (src/deploy/s3-direct.ts): keys a file name can
 * make that a request path must escape, and a way to give the SDK's credential chain an
 * environment for the stores a test makes in its own process.
 */

/** Spaces, `+`, `~`, `%`, reserved characters, unicode in and beyond the BMP, a final slash. */
export const AWKWARD_KEYS = [
  'a b/c d.xml',
  'plus+sign',
  'tilde~and.dots-_',
  'per%cent/%41%2F',
  'ünïcödé/日本語',
  "(paren)!*'",
  'emoji-😀',
  'a=b&c;d,e:f@g$h#i?j[k]',
  'dir/',
];

export function putRequest(key: string, extra: Partial<PutRequest> = {}): PutRequest {
  const body = Buffer.from(`<feed>the bytes of ${key}</feed>\n`);
  return {
    key,
    body,
    contentType: 'application/atom+xml; charset=utf-8',
    cacheControl: 'public, max-age=60',
    md5: createHash('md5').update(body).digest('hex'),
    metadata: { 'vidfeeds-sha256': createHash('sha256').update(body).digest('hex'), link: '<https://hub.example.net/>; rel="hub", <https://videos.example.org/alice/atom/>; rel="self"' },
    ...extra,
  };
}

/** Sets environment variables (the SDK chain's credentials, region) while `body` runs, then puts them back. */
export async function withEnvironment<T>(values: Record<string, string>, body: () => Promise<T>): Promise<T> {
  const before = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
  Object.assign(process.env, values);
  try {
    return await body();
  } finally {
    for (const [name, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

/** Every object the deploy's store lists under `prefix` (bucket `bucket` at `endpoint`), with `env` as the SDK chain's environment. */
export function listThroughStore(endpoint: string, bucket: string, prefix: string, env: Record<string, string>, policy: RequestPolicy): Promise<StoredObject[]> {
  return withEnvironment(env, async () => {
    const store = new S3Store({ target: { bucket, prefix: '' }, endpoint, policy });
    try {
      const objects: StoredObject[] = [];
      for await (const object of store.list(prefix)) objects.push(object);
      return objects;
    } finally {
      store.close();
    }
  });
}
