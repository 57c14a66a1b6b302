/**
 * What a deploy needs of an object store, so the deploy's order, comparison and reporting are
 * one piece of code whatever the store (src/deploy/s3-store.ts is the one real store; tests may
 * wrap it). Keys are full object keys, prefix included.
 */

export interface StoredObject {
  key: string;
  /** The store's ETag, without quotes. */
  etag: string;
  size: number;
}

export interface ObjectHead {
  etag: string;
  contentType?: string;
  cacheControl?: string;
  contentEncoding?: string;
  /** User metadata (`x-amz-meta-*`), names in lower case. */
  metadata: Record<string, string>;
}

export interface PutRequest {
  key: string;
  body: Uint8Array;
  contentType: string;
  cacheControl: string;
  contentEncoding?: string;
  /** MD5 of the body, hex: sent as Content-MD5, so the store refuses bytes damaged on the way. */
  md5: string;
  /** User metadata stored with the object. */
  metadata: Record<string, string>;
}

export interface ObjectStore {
  /** Every object whose key starts with `prefix`. */
  list(prefix: string): AsyncIterable<StoredObject>;
  /** The object's headers and metadata, or null when there is none. */
  head(key: string): Promise<ObjectHead | null>;
  /** Stores the object; resolves with its ETag (without quotes). */
  put(request: PutRequest): Promise<string>;
  /** Deletes the objects (at most 1,000); resolves with those the store could not delete. */
  remove(keys: readonly string[]): Promise<Array<{ key: string; message: string }>>;
}

/** Where a deploy goes: `s3://BUCKET[/PREFIX]`. */
export interface StoreTarget {
  bucket: string;
  /** '' or ending in `/`: prepended to every key. */
  prefix: string;
}

/**
 * Parses `s3://BUCKET[/PREFIX]`; returns why it cannot. The prefix gets one final slash; an empty
 * one puts the tree at the top of the bucket.
 */
export function parseStoreTarget(text: string): StoreTarget | { problem: string } {
  const match = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(text);
  if (!match) return { problem: `"${text}" is not s3://BUCKET or s3://BUCKET/PREFIX` };
  const bucket = match[1]!;
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{1,254}$/.test(bucket)) return { problem: `"${bucket}" is not a bucket name (letters, digits, dots, dashes and underscores)` };
  const raw = (match[2] ?? '').replace(/\/+$/, '');
  const segments = raw === '' ? [] : raw.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..' || /[\u0000-\u001f\u007f\\]/.test(s))) {
    return { problem: `the prefix "${raw}" must be path segments without empty, "." or ".." ones, backslashes or control characters` };
  }
  return { bucket, prefix: segments.length === 0 ? '' : `${segments.join('/')}/` };
}

export function showTarget(target: StoreTarget): string {
  return `s3://${target.bucket}/${target.prefix}`;
}
