import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig } from '../config/load-config.js';
import { planDocument } from '../deploy/deploy-plan.js';
import { FORMATS } from '../formats/registry.js';
import { cacheControlOf } from '../hosting/cache-control.js';
import { manifestEntries } from '../hosting/manifest.js';
import { routesOf } from '../hosting/routes.js';

/**
 * The deploy bench's independent client: Python's boto3 (Debian's python3-boto3) uploads the
 * objects of the first deploy (the same files, keys, types, cache and encoding headers, MD5 and
 * metadata) under another prefix of the same store, with as many requests at once as the deploy,
 * so that the deploy's throughput has a plain upload beside it to be measured against. It shares
 * no code with the deploy's client; it does no comparing, reads no listing and hashes nothing (the
 * MD5s are given), so its rate is what the store and the network allow one plain client.
 */

/** Why boto3 cannot run here (to say so in the bench's output), or null when it can. */
export function boto3Missing(): string | null {
  const probe = spawnSync(PYTHON, ['-c', 'import boto3'], { encoding: 'utf8' });
  if (probe.error !== undefined) return `${PYTHON} cannot run (${probe.error.message})`;
  return probe.status === 0 ? null : `${PYTHON} has no boto3 (apt-get install python3-boto3)`;
}

/**
 * Writes the objects a first deploy of `out` under `prefix` writes, one JSON object a line, to
 * `listFile`: the tree read one file at a time, as the deploy reads it, and of its documents every
 * `every`-th (a sample spread over the whole tree: a rate needs no more than some hundreds of
 * thousands of objects, and boto3 would take hours over the millions of a large site). Returns how
 * many objects it lists.
 */
export async function writeUploadList(out: string, prefix: string, listFile: string, every = 1): Promise<number> {
  const config = loadConfig({ configFile: undefined });
  const routes = routesOf(FORMATS);
  const fd = openSync(listFile, 'w');
  let count = 0;
  try {
    const entries = manifestEntries(new AbortController().signal, routes, resolve(out), '', 'vidfeeds bench', (format) => cacheControlOf(config.cacheControl, format));
    let seen = 0;
    for await (const entry of entries) {
      if (seen++ % every !== 0) continue;
      const document = planDocument(entry, routes, prefix, undefined);
      if (document === null) continue;
      writeSync(fd, document.objects.map((object) => `${JSON.stringify(object)}\n`).join(''));
      count += document.objects.length;
    }
  } finally {
    closeSync(fd);
  }
  return count;
}

export interface WitnessRun {
  objects: number;
  bytes: number;
  failed: number;
  /** From the first request to the last answer. */
  seconds: number;
}

/** Uploads the objects of `listFile` (from `writeUploadList`) with boto3, `concurrency` at once. */
export function uploadWithBoto3(input: { out: string; listFile: string; endpoint: string; bucket: string; concurrency: number; credentials: Record<string, string> }): Promise<WitnessRun> {
  const args = JSON.stringify({ root: resolve(input.out), list: input.listFile, endpoint: input.endpoint, bucket: input.bucket, concurrency: input.concurrency });
  return new Promise((resolvePromise, reject) => {
    const child = spawn(PYTHON, ['-c', UPLOAD, args], { env: { ...process.env, ...input.credentials }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolvePromise(JSON.parse(stdout) as WitnessRun);
      else reject(new Error(`the boto3 upload failed (exit code ${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`));
    });
  });
}

const PYTHON = '/usr/bin/python3';

/** The upload: a pool of `concurrency` threads, fed from the list as they free up, one client for all (boto3's clients are thread-safe). */
const UPLOAD = `
import base64, json, os, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
import boto3
from botocore.config import Config
args = json.loads(sys.argv[1])
n = args["concurrency"]
s3 = boto3.client("s3", endpoint_url=args["endpoint"], config=Config(s3={"addressing_style": "path"}, max_pool_connections=n, retries={"mode": "standard", "max_attempts": 6}))
slots = threading.BoundedSemaphore(n * 4)
lock = threading.Lock()
done = {"objects": 0, "bytes": 0, "failed": 0}
def put(o):
    try:
        with open(os.path.join(args["root"], *o["file"].split("/")), "rb") as f:
            body = f.read()
        meta = {"vidfeeds-sha256": o["sha256"]}
        if "link" in o:
            meta["link"] = o["link"]
        extra = {"ContentEncoding": o["contentEncoding"]} if "contentEncoding" in o else {}
        s3.put_object(Bucket=args["bucket"], Key=o["key"], Body=body, ContentType=o["contentType"], CacheControl=o["cacheControl"],
                      ContentMD5=base64.b64encode(bytes.fromhex(o["md5"])).decode(), Metadata=meta, **extra)
        with lock:
            done["objects"] += 1
            done["bytes"] += len(body)
    except Exception as error:
        with lock:
            done["failed"] += 1
            if done["failed"] <= 3:
                print(f"{o['key']}: {error}", file=sys.stderr)
    finally:
        slots.release()
started = time.monotonic()
with ThreadPoolExecutor(n) as pool, open(args["list"]) as objects:
    for line in objects:
        slots.acquire()
        pool.submit(put, json.loads(line))
print(json.dumps({**done, "seconds": time.monotonic() - started}))
sys.exit(1 if done["failed"] > 0 else 0)
`;
