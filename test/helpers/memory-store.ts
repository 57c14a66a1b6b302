import { createHash } from 'node:crypto';
import type { ObjectHead, ObjectStore, PutRequest, StoredObject } from '../../src/deploy/object-store.js';

/**
 * An object store in memory, for deploys whose requests a test must see and steer: its listing can
 * come out of order and leave keys out, a write can be made to fail, and every request is recorded.
 */
export class MemoryStore implements ObjectStore {
  readonly objects = new Map<string, { etag: string; size: number; head: ObjectHead }>();
  puts: string[] = [];
  heads: string[] = [];
  removes: string[][] = [];
  listing: { order: 'sorted' | 'reversed'; omit: ReadonlySet<string> } = { order: 'sorted', omit: new Set() };
  /** The number of the write (from 1) that fails for good, if any. */
  failingPut: number | null = null;

  async *list(prefix: string): AsyncIterable<StoredObject> {
    const keys = [...this.objects.keys()].filter((k) => k.startsWith(prefix) && !this.listing.omit.has(k)).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    if (this.listing.order === 'reversed') keys.reverse();
    for (const key of keys) {
      const { etag, size } = this.objects.get(key)!;
      yield { key, etag, size };
    }
  }

  async head(key: string): Promise<ObjectHead | null> {
    this.heads.push(key);
    return this.objects.get(key)?.head ?? null;
  }

  async put(request: PutRequest): Promise<string> {
    this.puts.push(request.key);
    if (this.puts.length === this.failingPut) throw Object.assign(new Error('Access Denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });
    const etag = createHash('md5').update(request.body).digest('hex');
    const head: ObjectHead = {
      etag,
      contentType: request.contentType,
      cacheControl: request.cacheControl,
      ...(request.contentEncoding === undefined ? {} : { contentEncoding: request.contentEncoding }),
      metadata: request.metadata,
    };
    this.objects.set(request.key, { etag, size: request.body.length, head });
    return etag;
  }

  async remove(keys: readonly string[]): Promise<Array<{ key: string; message: string }>> {
    this.removes.push([...keys]);
    for (const key of keys) this.objects.delete(key);
    return [];
  }
}

