import { byCodePoint } from '../db/by-code-point.js';
import type { ShardSpec } from '../shard/shard.js';
import type { ManifestEntry } from '../hosting/manifest.js';
import type { Routes } from '../hosting/routes.js';
import { ownedDocumentOf, planDocument, type PlannedDocument, type PlannedObject } from './deploy-plan.js';
import { addHeaderLines, fingerprintOfHeaderLines, type DeployRecord } from './deploy-record.js';
import type { ObjectHead, ObjectStore, StoredObject, StoreTarget } from './object-store.js';
import { PlanSpill, type CheckResult } from './plan-spill.js';
import { runPool } from './pool.js';
import { StopRequested } from './store-requests.js';
import type { WritePlan } from './write-plan.js';

/**
 * The full compare of the tree with the store, in bounded memory: the tree is read and hashed one
 * file at a time (in the order the file system gives) while the store lists the prefix, both into
 * a temporary database (src/deploy/plan-spill.ts), so that the compare takes about the longer of
 * the two, not their sum; once both are in, they are matched by key, and the objects the listing
 * cannot decide are asked for (HEAD) a page at a time. An object is the same when the store holds
 * its bytes with its headers (by the MD5 ETag and the SHA-256 kept in its metadata, never by times).
 */

/** What a full compare needs of the deploy (src/deploy/run-deploy.ts's request extends it). */
export interface CompareRequest {
  /**
   * The tree's documents: for a full compare, read one at a time (src/hosting/manifest.ts's
   * `manifestEntries`, which lets other work run every few files); for an incremental deploy, the
   * changed documents only.
   */
  manifest: { files: Iterable<ManifestEntry> | AsyncIterable<ManifestEntry> };
  routes: Routes;
  target: StoreTarget;
  store: ObjectStore;
  shard?: ShardSpec;
  concurrency: number;
  record: DeployRecord;
  /** Names the target in the record: the endpoint and the location (and the part). */
  recordId: string;
  /** The signal that asked the deploy to stop, if one did (the store's requests are aborted by it too). */
  stopRequested?: () => 'SIGINT' | 'SIGTERM' | null;
}

/** Where the compare notes the first two keys the store listed out of S3's order. */
interface ListingNote {
  unorderedListing: { before: string; after: string } | null;
}

/** Documents written to the spill at once, and listed objects added at once. */
const BATCH = 512;

export async function fullCompare(request: CompareRequest, report: ListingNote): Promise<WritePlan> {
  const spill = new PlanSpill();
  try {
    // Whichever of the two fails first stops the other.
    const failed: { tree: boolean; listing: { error: unknown } | null } = { tree: false, listing: null };
    const listing = listInto(spill, request, report, () => failed.tree).catch((error: unknown) => {
      failed.listing = { error };
    });
    let headerLines: Set<string>;
    try {
      headerLines = await readTree(request, spill, () => failed.listing !== null);
    } catch (error) {
      failed.tree = true;
      await listing;
      throw error;
    }
    await listing;
    // On a stop, the tree's reading ends early and the listing's request is aborted: neither is whole.
    if (request.stopRequested?.() != null) throw new StopRequested();
    if (failed.listing !== null) throw failed.listing.error;

    const fingerprint = fingerprintOfHeaderLines(headerLines);
    const known = request.record.get(request.recordId);
    const { routes, target, shard } = request;
    spill.matchListing({
      trustEtags: known !== undefined && known.headers === fingerprint && known.etagsAreMd5,
      // A listing out of key order was paged by a store that does not keep S3's order, and such a
      // store can leave keys out at a page's edge: what it did not list is asked for one by one.
      listingComplete: report.unorderedListing === null,
      owned: (key) => ownedDocumentOf(routes, target.prefix, key, shard) !== null,
    });
    const checked = await checkAll(request, spill);
    return spill.plan({ known, fingerprint, checked });
  } catch (error) {
    spill.close();
    throw error;
  }
}

/** Reads and hashes every document of the tree into the plan, unless `abandoned` says to stop; returns the header lines they carry. */
async function readTree(request: CompareRequest, spill: PlanSpill, abandoned: () => boolean): Promise<Set<string>> {
  const headerLines = new Set<string>();
  let batch: PlannedDocument[] = [];
  for await (const entry of request.manifest.files) {
    if (abandoned()) break;
    const document = planDocument(entry, request.routes, request.target.prefix, request.shard);
    if (document === null) continue;
    addHeaderLines(headerLines, document);
    batch.push(document);
    if (batch.length >= BATCH) {
      spill.addDocuments(batch);
      batch = [];
    }
  }
  spill.addDocuments(batch);
  return headerLines;
}

/** Adds the store's listing of the prefix to the plan a page at a time, noting whether it came in S3's order; ends early when `abandoned` says so. */
async function listInto(spill: PlanSpill, request: CompareRequest, report: ListingNote, abandoned: () => boolean): Promise<void> {
  let page: StoredObject[] = [];
  let previous: string | undefined;
  for await (const object of request.store.list(request.target.prefix)) {
    if (abandoned()) return;
    if (previous !== undefined && report.unorderedListing === null && byCodePoint(previous, object.key) >= 0) {
      report.unorderedListing = { before: previous, after: object.key };
    }
    previous = object.key;
    page.push(object);
    if (page.length >= BATCH) {
      spill.addListed(page);
      page = [];
    }
  }
  spill.addListed(page);
}

/** Asks the store for the headers of every object the listing could not decide; returns how many. */
async function checkAll(request: CompareRequest, spill: PlanSpill): Promise<number> {
  let checked = 0;
  for (let page = spill.toCheck(0); page.length > 0; page = spill.toCheck(page.at(-1)!.id)) {
    const results: CheckResult[] = [];
    const unchecked = await runPool(
      page,
      request.concurrency,
      async (object) => {
        const head = await request.store.head(object.key);
        const same = head !== null && headMatches(object, head);
        // Rewritten only for its headers: its readers' content did not change.
        const headersOnly = head !== null && !same && head.metadata['vidfeeds-sha256'] === object.sha256;
        results.push({ id: object.id, verdict: same ? 'same' : 'write', stored: head !== null, headersOnly });
      },
      () => request.stopRequested?.() != null,
    );
    spill.applyChecks(results);
    if (unchecked.length > 0) throw new StopRequested();
    checked += page.length;
  }
  return checked;
}

function headMatches(object: PlannedObject, head: ObjectHead): boolean {
  return (
    head.metadata['vidfeeds-sha256'] === object.sha256 &&
    head.contentType === object.contentType &&
    head.cacheControl === object.cacheControl &&
    (head.contentEncoding ?? '') === (object.contentEncoding ?? '') &&
    (head.metadata.link ?? '') === (object.link ?? '')
  );
}
