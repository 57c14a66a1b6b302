import { spawnSync } from 'node:child_process';

/**
 * A second S3 client beside the AWS SDK for JavaScript the deploy uses: Python's boto3 (Debian's
 * python3-boto3), so that what a store holds is read by code that shares nothing with the writer.
 */

export interface S3Account {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

export interface StoredObject {
  body: Buffer;
  /** The ETag, without quotes. */
  etag: string;
  contentType?: string;
  cacheControl?: string;
  contentEncoding?: string;
  metadata: Record<string, string>;
}

const SETUP = `
import sys, json, base64, boto3
from botocore.config import Config
account = json.loads(sys.argv[1])
s3 = boto3.client("s3", endpoint_url=account["endpoint"], aws_access_key_id=account["accessKeyId"],
                  aws_secret_access_key=account["secretAccessKey"], region_name=account["region"],
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
`;

function python(what: string, script: string, args: string[]): string {
  const result = spawnSync('/usr/bin/python3', ['-c', SETUP + script, ...args], { encoding: 'utf8', maxBuffer: 512 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`boto3 ${what} failed (is python3-boto3 installed? .ci/run installs it): ${result.stderr}${result.error?.message ?? ''}`);
  return result.stdout;
}

export function createBucket(account: S3Account, bucket: string): void {
  python('create_bucket', 's3.create_bucket(Bucket=sys.argv[2])', [JSON.stringify(account), bucket]);
}

/** Every object under `prefix` (listed page by page, in the store's order), each read whole. */
export function readObjects(account: S3Account, bucket: string, prefix: string): Map<string, StoredObject> {
  const script = `
out = {}
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=sys.argv[2], Prefix=sys.argv[3]):
    for item in page.get("Contents", []):
        o = s3.get_object(Bucket=sys.argv[2], Key=item["Key"])
        out[item["Key"]] = {"body": base64.b64encode(o["Body"].read()).decode(), "etag": o["ETag"].strip('"'), "contentType": o.get("ContentType"),
                            "cacheControl": o.get("CacheControl"), "contentEncoding": o.get("ContentEncoding"),
                            "metadata": o.get("Metadata", {})}
print(json.dumps(out))
`;
  type Read = { body: string; etag: string; contentType: string | null; cacheControl: string | null; contentEncoding: string | null; metadata: Record<string, string> };
  const parsed = JSON.parse(python('get_object', script, [JSON.stringify(account), bucket, prefix])) as Record<string, Read>;
  const objects = new Map<string, StoredObject>();
  for (const [key, o] of Object.entries(parsed)) {
    objects.set(key, {
      body: Buffer.from(o.body, 'base64'),
      etag: o.etag,
      contentType: o.contentType ?? undefined,
      cacheControl: o.cacheControl ?? undefined,
      contentEncoding: o.contentEncoding ?? undefined,
      metadata: o.metadata,
    });
  }
  return objects;
}
