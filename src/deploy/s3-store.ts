import {
  DeleteObjectsCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { ObjectHead, ObjectStore, PutRequest, StoredObject, StoreTarget } from './object-store.js';
import { DirectS3, unquote, type ListPage } from './s3-direct.js';
import { withTries, type RequestPolicy } from './store-requests.js';

/**
 * An S3-compatible store (AWS S3, Cloudflare R2, MinIO, Garage, Ceph) through the official AWS SDK
 * for JavaScript. Credentials and the region come from the SDK's standard chain (environment,
 * shared config and credentials files, SSO, instance or container roles), never from vidfeeds's
 * configuration. The SDK client makes one try per call: the tries, deadlines and back-off are
 * src/deploy/store-requests.ts's, so that the SDK's retry quota (one allowance shared by every
 * request of a client, spent in an outage) never cuts `--tries` short. The uploads, one request
 * per object, and the listing's pages are signed and sent by src/deploy/s3-direct.ts without the
 * SDK's per-command stack, with the client's endpoint, credentials and region.
 */
export interface S3StoreOptions {
  target: StoreTarget;
  /** Another S3-compatible endpoint than AWS's (R2, MinIO, a local store): path-style addressing then. */
  endpoint?: string;
  /** Tries per request, deadline of each, and the stop signal. */
  policy: RequestPolicy;
  /** Requests at once (the deploy's --concurrency): the most connections the uploads keep open. */
  concurrency?: number;
}

export class S3Store implements ObjectStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly policy: RequestPolicy;
  private readonly maxSockets: number;
  private direct: Promise<DirectS3 | null> | undefined;

  constructor(options: S3StoreOptions) {
    this.bucket = options.target.bucket;
    this.policy = options.policy;
    this.maxSockets = options.concurrency ?? 64;
    this.client = new S3Client({
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint, forcePathStyle: true }),
      // No region in the environment or profile: buckets on other endpoints ignore it, and AWS
      // itself redirects the SDK to the bucket's region.
      region: memo(async () => (await defaultRegion()) ?? 'us-east-1'),
      maxAttempts: 1,
      // Content-MD5 (below) protects each upload; the SDK's newer default checksums are not
      // understood by every S3-compatible store.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  async *list(prefix: string): AsyncIterable<StoredObject> {
    let token: string | undefined;
    do {
      const page = await withTries(`the listing of ${prefix === '' ? 'the bucket' : prefix}`, this.policy, async (abortSignal) => {
        const direct = await this.directRequests();
        return direct === null ? this.listThroughSdk(prefix, token, abortSignal) : direct.listPage(prefix, token, abortSignal);
      });
      yield* page.objects;
      token = page.next;
    } while (token !== undefined);
  }

  private async listThroughSdk(prefix: string, token: string | undefined, abortSignal: AbortSignal): Promise<ListPage> {
    const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }), { abortSignal });
    return {
      objects: (page.Contents ?? []).flatMap((item) => (item.Key === undefined ? [] : [{ key: item.Key, etag: unquote(item.ETag), size: item.Size ?? 0 }])),
      next: page.IsTruncated ? page.NextContinuationToken : undefined,
    };
  }

  async head(key: string): Promise<ObjectHead | null> {
    const command = new HeadObjectCommand({ Bucket: this.bucket, Key: key });
    const head = await withTries(`HEAD ${key}`, this.policy, async (abortSignal) => {
      try {
        return await this.client.send(command, { abortSignal });
      } catch (error) {
        if (error instanceof S3ServiceException && (error.$metadata.httpStatusCode === 404 || error.name === 'NotFound')) return null;
        throw error;
      }
    });
    return head === null
      ? null
      : {
          etag: unquote(head.ETag),
          contentType: head.ContentType,
          cacheControl: head.CacheControl,
          contentEncoding: head.ContentEncoding,
          metadata: lowerKeys(head.Metadata ?? {}),
        };
  }

  async put(request: PutRequest): Promise<string> {
    return withTries(`PUT ${request.key}`, this.policy, async (abortSignal) => {
      const direct = await this.directRequests();
      return direct === null ? this.putThroughSdk(request, abortSignal) : direct.put(request, abortSignal);
    });
  }

  /** The uploads' and listing's sender, made once: null when the bucket's requests are not plain SigV4 ones (then the SDK sends them). */
  private directRequests(): Promise<DirectS3 | null> {
    this.direct ??= DirectS3.open(this.client, this.bucket, this.maxSockets).catch((error: unknown) => {
      this.direct = undefined;
      throw error;
    });
    return this.direct;
  }

  private async putThroughSdk(request: PutRequest, abortSignal: AbortSignal): Promise<string> {
    const command = new PutObjectCommand({
      Bucket: this.bucket,
      Key: request.key,
      Body: request.body,
      ContentType: request.contentType,
      CacheControl: request.cacheControl,
      ContentEncoding: request.contentEncoding,
      ContentMD5: Buffer.from(request.md5, 'hex').toString('base64'),
      Metadata: request.metadata,
    });
    const result = await this.client.send(command, { abortSignal });
    return unquote(result.ETag);
  }

  async remove(keys: readonly string[]): Promise<Array<{ key: string; message: string }>> {
    if (keys.length === 0) return [];
    const command = new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } });
    const result = await withTries(`the deletion of ${keys.length} objects`, this.policy, (abortSignal) => this.client.send(command, { abortSignal }));
    return (result.Errors ?? []).map((e) => ({ key: e.Key ?? '?', message: `${e.Code ?? 'error'}: ${e.Message ?? ''}`.trim() }));
  }

  close(): void {
    this.client.destroy();
    void this.direct?.then((direct) => direct?.close(), () => undefined);
  }
}

/** A provider that asks once. */
function memo<T>(provider: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= provider());
}

/** The region the SDK's chain names (AWS_REGION, the profile), if any. */
async function defaultRegion(): Promise<string | undefined> {
  try {
    const probe = new S3Client({});
    const region = await probe.config.region();
    probe.destroy();
    return region;
  } catch {
    return undefined;
  }
}

function lowerKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k.toLowerCase(), v]));
}

