import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ShardSpec } from '../shard/shard.js';
import type { Manifest } from '../hosting/manifest.js';
import type { Routes } from '../hosting/routes.js';
import { keysOf, routeOfFile } from '../hosting/manifest.js';
import { isCompressible, type Encoding } from '../paths/compression.js';
import { ownedDocumentOf, ownsMatch, planDocuments, SITE_RANKS, type PlannedDocument, type PlannedObject } from './deploy-plan.js';
import { headersFingerprint, type DeployRecord, type PublishedState } from './deploy-record.js';
import type { ObjectStore, StoredObject, StoreTarget } from './object-store.js';
import { showTarget } from './object-store.js';
import { runPool } from './pool.js';
import { describeStoreError, StopRequested, StoreRequestError } from './store-requests.js';

/**
 * One deploy of a built tree to an object store: compare, then write in the safe order of
 * src/deploy/deploy-plan.ts, then delete. An object is written only when the store does not
 * already hold its bytes with its headers (by the MD5 ETag and the SHA-256 kept in its metadata,
 * never by times). An object that could not be written (after its tries, src/deploy/store-requests.ts)
 * halts the deploy: no other request starts, since the later steps would link to it or delete what
 * still links. A stop request (SIGINT, SIGTERM) aborts the requests under way and starts no other.
 * The next deploy compares again, so it resumes where this one stopped.
 */

export interface DeployRequest {
  /** The tree (the `--out` of the build). */
  out: string;
  manifest: Manifest;
  routes: Routes;
  target: StoreTarget;
  store: ObjectStore;
  shard?: ShardSpec;
  concurrency: number;
  dryRun: boolean;
  record: DeployRecord;
  /** Names the target in the record: the endpoint and the location (and the part). */
  recordId: string;
  /** The signal that asked the deploy to stop, if one did (the store's requests are aborted by it too). */
  stopRequested?: () => 'SIGINT' | 'SIGTERM' | null;
  /**
   * Called once the comparison is done, before the first write, with the documents about to
   * change for readers (written, removed): what the listeners will be owed.
   */
  beforeWrites?: (changed: string[], removed: string[]) => void;
  /**
   * An incremental deploy (src/deploy/deploy-basis.ts): the manifest holds only the documents the
   * builds since the last deploy changed, every object of which is written, without listing the
   * store; `newFiles` are those added since, `removedFiles` those removed, whose keys are deleted.
   */
  incremental?: { newFiles: ReadonlySet<string>; removedFiles: readonly string[]; encodings: readonly Encoding[] };
  /** Recorded for the target once everything planned was done: the build state the store now holds. */
  published?: PublishedState | null;
  /** When the deploy began (before the tree was read), for its reported seconds. */
  startedAt?: bigint;
  /** Each object written or deleted, as it happens. */
  progress?: (event: { key: string; action: 'uploaded' | 'deleted' }) => void;
}

export interface DeployReport {
  target: string;
  dryRun: boolean;
  /** Whether only what the builds since the last deploy changed was sent, or the whole tree compared; and why. */
  mode: 'incremental' | 'full';
  reason: string | null;
  documents: number;
  objects: number;
  /** Objects written, by step. */
  uploaded: { new: number; changed: number; site: number };
  bytesUploaded: number;
  deleted: number;
  unchanged: number;
  /** Objects whose headers and metadata were asked of the store. */
  checked: number;
  /**
   * The first two keys the store listed out of S3's order (ascending UTF-8 bytes), if any: then
   * objects missing from its listing were asked for one by one, and objects to delete that it
   * left out stay in the store.
   */
  unorderedListing: { before: string; after: string } | null;
  /** Keys written (or, in a dry run, to write), and deleted (or to delete). */
  uploadedKeys: string[];
  deletedKeys: string[];
  /** Files of the documents written, and of the documents whose objects were deleted: what changed for readers. */
  changedFiles: string[];
  removedFiles: string[];
  /** Objects that could not be written or deleted, with why. */
  failed: DeployFailure[];
  /** Objects not attempted, because an earlier step failed or the deploy was stopped. */
  notAttempted: string[];
  stoppedBy: 'SIGINT' | 'SIGTERM' | null;
  seconds: number;
}

export interface DeployFailure {
  key: string;
  message: string;
  /** Whether the store may take it later (throttling, server errors, no connection, no answer). */
  transient: boolean;
}

type Verdict = 'same' | 'write' | 'check';

const DELETE_BATCH = 1000;

export async function runDeploy(request: DeployRequest): Promise<DeployReport> {
  const started = request.startedAt ?? process.hrtime.bigint();
  const { target, routes, shard } = request;
  const documents = planDocuments(request.manifest, routes, target.prefix, shard);
  const report = emptyReport(showTarget(target), request.dryRun, documents);
  const finish = () => {
    report.stoppedBy = request.stopRequested?.() ?? null;
    report.seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return report;
  };
  let compared: Compared;
  try {
    compared = request.incremental === undefined ? await compare(request, documents, report) : incrementalCompare(request, documents, request.incremental);
  } catch (error) {
    // A stop during the comparison: nothing was written, and what would have been is not known yet.
    if (error instanceof StopRequested) return finish();
    throw error;
  }
  const { verdicts, deletions, steps, headersOnly, known, fingerprint } = compared;
  report.unchanged = [...verdicts.values()].filter((v) => v === 'same').length;

  const plannedFiles = new Set(documents.map((d) => d.file));
  if (!request.dryRun) request.beforeWrites?.(...readerChanges(request, compared, plannedFiles));

  const state = { etagsAreMd5: known?.etagsAreMd5 ?? true, halted: false };
  for (const step of steps) {
    const writes = (d: PlannedDocument) => d.objects.filter((o) => verdicts.get(o.key) === 'write').map((o) => o.key);
    if (state.halted || request.stopRequested?.() != null) {
      report.notAttempted.push(...step.documents.flatMap(writes));
      continue;
    }
    const notStarted = await runPool(step.documents, request.concurrency, (document) => writeDocument(request, document, step.kind, verdicts, headersOnly, report, state), () => halted(request, state));
    report.notAttempted.push(...notStarted.flatMap(writes));
  }

  if (state.halted || request.stopRequested?.() != null) {
    report.notAttempted.push(...deletions);
  } else {
    await deleteAll(request, deletions, report, state, plannedFiles);
  }
  if (!request.dryRun && report.failed.length === 0 && report.notAttempted.length === 0 && request.stopRequested?.() == null) {
    const published = request.published ?? undefined;
    request.record.set(request.recordId, { headers: fingerprint, etagsAreMd5: state.etagsAreMd5, ...(published === undefined ? {} : { published }) });
  }
  return finish();
}

interface Compared {
  verdicts: Map<string, Verdict>;
  deletions: string[];
  steps: Step[];
  headersOnly: Set<string>;
  known: ReturnType<DeployRecord['get']>;
  fingerprint: string;
}

/** The store's listing against the plan: what is the same, what to write in which step, what to delete. */
async function compare(request: DeployRequest, documents: readonly PlannedDocument[], report: DeployReport): Promise<Compared> {
  const { target, store, routes, shard } = request;
  const remote = new Map<string, StoredObject>();
  let previous: string | undefined;
  for await (const object of store.list(target.prefix)) {
    if (previous !== undefined && report.unorderedListing === null && !inKeyOrder(previous, object.key)) {
      report.unorderedListing = { before: previous, after: object.key };
    }
    previous = object.key;
    remote.set(object.key, object);
  }
  // A listing out of key order was paged by a store that does not keep S3's order, and such a
  // store can leave keys out at a page's edge: what it did not list is asked for one by one.
  const listingComplete = report.unorderedListing === null;

  const fingerprint = headersFingerprint(documents);
  const known = request.record.get(request.recordId);
  const trustEtags = known !== undefined && known.headers === fingerprint && known.etagsAreMd5;
  const verdicts = new Map<string, Verdict>();
  for (const document of documents) {
    for (const object of document.objects) verdicts.set(object.key, firstVerdict(object, remote.get(object.key), trustEtags, listingComplete));
  }
  const toCheck = documents.flatMap((d) => d.objects.filter((o) => verdicts.get(o.key) === 'check'));
  // Objects rewritten only for their headers: their readers' content did not change.
  const headersOnly = new Set<string>();
  // Objects the store holds that its listing left out.
  const unlisted = new Set<string>();
  const unchecked = await runPool(
    toCheck,
    request.concurrency,
    async (object) => {
      const head = await store.head(object.key);
      verdicts.set(object.key, head !== null && headMatches(object, head) ? 'same' : 'write');
      if (head !== null && !remote.has(object.key)) unlisted.add(object.key);
      if (head !== null && head.metadata['vidfeeds-sha256'] === object.sha256 && verdicts.get(object.key) === 'write') headersOnly.add(object.key);
    },
    () => request.stopRequested?.() != null,
  );
  if (unchecked.length > 0) throw new StopRequested();
  report.checked = toCheck.length;

  const planned = new Set(documents.flatMap((d) => d.objects.map((o) => o.key)));
  const deletions = [...remote.keys()].filter((key) => !planned.has(key) && ownedDocumentOf(routes, target.prefix, key, shard) !== null).sort();
  const steps = orderSteps(documents, (key) => remote.has(key) || unlisted.has(key), verdicts);
  return { verdicts, deletions, steps, headersOnly, known, fingerprint };
}

/** The documents this deploy is about to change for readers: those whose bytes it writes, and those it removes. */
function readerChanges(request: DeployRequest, compared: Compared, plannedFiles: ReadonlySet<string>): [string[], string[]] {
  const { verdicts, headersOnly, steps, deletions } = compared;
  const changed = steps
    .flatMap((step) => step.documents)
    .filter((d) => d.objects.some((o) => verdicts.get(o.key) === 'write' && o.contentEncoding === undefined && !headersOnly.has(o.key)))
    .map((d) => d.file);
  const removed = new Set<string>();
  for (const key of deletions) {
    const file = ownedDocumentOf(request.routes, request.target.prefix, key, request.shard);
    if (file !== null && !plannedFiles.has(file)) removed.add(file);
  }
  return [changed, [...removed]];
}

/** An incremental deploy's plan: every object of the changed documents to write, the removed documents' keys to delete. */
function incrementalCompare(request: DeployRequest, documents: readonly PlannedDocument[], changes: NonNullable<DeployRequest['incremental']>): Compared {
  const verdicts = new Map<string, Verdict>();
  const newKeys = new Set<string>();
  for (const document of documents) {
    for (const object of document.objects) {
      verdicts.set(object.key, 'write');
      if (changes.newFiles.has(document.file)) newKeys.add(object.key);
    }
  }
  const deletions = new Set<string>();
  for (const file of changes.removedFiles) {
    const match = routeOfFile(request.routes, file);
    if (match === null || !ownsMatch(request.shard, match)) continue;
    // Its forms are those of the encodings its last published build wrote (compression unchanged since).
    const forms = isCompressible(match.format.mediaType) ? changes.encodings : [];
    for (const key of keysOf(match)) {
      deletions.add(`${request.target.prefix}${key}`);
      for (const encoding of forms) deletions.add(`${request.target.prefix}${key}.${encoding === 'gzip' ? 'gz' : 'br'}`);
    }
  }
  const known = request.record.get(request.recordId);
  return {
    verdicts,
    deletions: [...deletions].sort(),
    steps: orderSteps(documents, (key) => !newKeys.has(key), verdicts),
    headersOnly: new Set(),
    known,
    // The headers are the last deploy's: the basis's configuration fingerprint is unchanged.
    fingerprint: known?.headers ?? headersFingerprint(documents),
  };
}

interface WriteState {
  etagsAreMd5: boolean;
  /** An object failed: no other request starts. */
  halted: boolean;
}

function halted(request: DeployRequest, state: WriteState): boolean {
  return state.halted || request.stopRequested?.() != null;
}

/** Writes a document's objects that differ, its compressed forms first; a failure halts the deploy. */
async function writeDocument(
  request: DeployRequest,
  document: PlannedDocument,
  kind: Step['kind'],
  verdicts: ReadonlyMap<string, Verdict>,
  headersOnly: ReadonlySet<string>,
  report: DeployReport,
  state: WriteState,
): Promise<void> {
  const writes = document.objects.filter((o) => verdicts.get(o.key) === 'write');
  for (const [i, object] of writes.entries()) {
    // The document's plain keys must not go up after a form that did not.
    if (halted(request, state)) {
      report.notAttempted.push(...writes.slice(i).map((o) => o.key));
      return;
    }
    try {
      if (!request.dryRun) {
        const etag = await request.store.put(putOf(request.out, object));
        if (etag !== object.md5) state.etagsAreMd5 = false;
        request.progress?.({ key: object.key, action: 'uploaded' });
      }
      report.uploaded[kind]++;
      report.bytesUploaded += object.size;
      report.uploadedKeys.push(object.key);
    } catch (error) {
      if (error instanceof StopRequested) {
        // Aborted under way: the store may or may not hold it; the next deploy compares again.
        report.notAttempted.push(...writes.slice(i).map((o) => o.key));
        return;
      }
      report.failed.push(failureOf(object.key, error));
      state.halted = true;
      report.notAttempted.push(...writes.slice(i + 1).map((o) => o.key));
      return;
    }
  }
  // A document whose bytes changed for readers: one of its own keys got other bytes.
  if (writes.some((o) => o.contentEncoding === undefined && !headersOnly.has(o.key))) report.changedFiles.push(document.file);
}

/** What the listing alone says of an object: the same bytes and headers, to write, or to ask the store. */
function firstVerdict(object: PlannedObject, stored: StoredObject | undefined, trustEtags: boolean, listingComplete: boolean): Verdict {
  if (stored === undefined) return listingComplete ? 'write' : 'check';
  if (stored.size !== object.size) return 'write';
  if (trustEtags) return stored.etag === object.md5 ? 'same' : 'write';
  return 'check';
}

function headMatches(object: PlannedObject, head: { contentType?: string; cacheControl?: string; contentEncoding?: string; metadata: Record<string, string> }): boolean {
  return (
    head.metadata['vidfeeds-sha256'] === object.sha256 &&
    head.contentType === object.contentType &&
    head.cacheControl === object.cacheControl &&
    (head.contentEncoding ?? '') === (object.contentEncoding ?? '') &&
    (head.metadata.link ?? '') === (object.link ?? '')
  );
}

interface Step {
  kind: 'new' | 'changed' | 'site';
  documents: PlannedDocument[];
}

/** The steps in the safe order, each with the documents that have something to write. */
function orderSteps(documents: readonly PlannedDocument[], isStored: (key: string) => boolean, verdicts: ReadonlyMap<string, Verdict>): Step[] {
  const pending = documents.filter((d) => d.objects.some((o) => verdicts.get(o.key) === 'write'));
  const isNew = (d: PlannedDocument) => d.objects.every((o) => !isStored(o.key));
  const steps: Step[] = [
    { kind: 'new', documents: pending.filter((d) => d.rank === 0 && isNew(d)) },
    { kind: 'changed', documents: pending.filter((d) => d.rank === 0 && !isNew(d)) },
  ];
  for (const rank of [SITE_RANKS.plain, SITE_RANKS.parts, SITE_RANKS.index, SITE_RANKS.last]) {
    steps.push({ kind: 'site', documents: pending.filter((d) => d.rank === rank) });
  }
  return steps;
}

async function deleteAll(request: DeployRequest, keys: readonly string[], report: DeployReport, state: WriteState, plannedFiles: ReadonlySet<string>): Promise<void> {
  const batches: string[][] = [];
  for (let i = 0; i < keys.length; i += DELETE_BATCH) batches.push(keys.slice(i, i + DELETE_BATCH));
  const removed = new Set<string>();
  const notStarted = await runPool(
    batches,
    Math.min(request.concurrency, 4),
    async (batch) => {
      let failures: DeployFailure[];
      try {
        failures = request.dryRun ? [] : (await request.store.remove(batch)).map((f) => ({ ...f, transient: false }));
      } catch (error) {
        if (error instanceof StopRequested) {
          report.notAttempted.push(...batch);
          return;
        }
        state.halted = true;
        failures = batch.map((key) => failureOf(key, error));
      }
      report.failed.push(...failures);
      const failed = new Set(failures.map((f) => f.key));
      for (const key of batch) {
        if (failed.has(key)) continue;
        report.deleted++;
        report.deletedKeys.push(key);
        if (!request.dryRun) request.progress?.({ key, action: 'deleted' });
        // A document is gone when none of its objects is planned (not when only a form of it is).
        const file = ownedDocumentOf(request.routes, request.target.prefix, key, request.shard);
        if (file !== null && !plannedFiles.has(file)) removed.add(file);
      }
    },
    () => halted(request, state),
  );
  report.notAttempted.push(...notStarted.flat());
  report.removedFiles.push(...removed);
}

function putOf(out: string, object: PlannedObject) {
  const body = readFileSync(join(out, ...object.file.split('/')));
  return {
    key: object.key,
    body,
    contentType: object.contentType,
    cacheControl: object.cacheControl,
    ...(object.contentEncoding === undefined ? {} : { contentEncoding: object.contentEncoding }),
    md5: object.md5,
    metadata: { 'vidfeeds-sha256': object.sha256, ...(object.link === undefined ? {} : { link: object.link }) },
  };
}

/** A report of nothing done yet (also a deploy stopped before its plan was made). */
export function emptyReport(target: string, dryRun: boolean, documents: readonly PlannedDocument[]): DeployReport {
  return {
    target,
    dryRun,
    mode: 'full',
    reason: null,
    documents: documents.length,
    objects: documents.reduce((n, d) => n + d.objects.length, 0),
    uploaded: { new: 0, changed: 0, site: 0 },
    bytesUploaded: 0,
    deleted: 0,
    unchanged: 0,
    checked: 0,
    unorderedListing: null,
    uploadedKeys: [],
    deletedKeys: [],
    changedFiles: [],
    removedFiles: [],
    failed: [],
    notAttempted: [],
    stoppedBy: null,
    seconds: 0,
  };
}

/** Whether `after` may follow `before` in an S3 listing: ascending by UTF-8 bytes. */
function inKeyOrder(before: string, after: string): boolean {
  // UTF-16 order is UTF-8 order but for surrogates against U+E000 to U+FFFF: the bytes decide then.
  return before < after || Buffer.compare(Buffer.from(before), Buffer.from(after)) < 0;
}

function failureOf(key: string, error: unknown): DeployFailure {
  if (error instanceof StoreRequestError) return { key, message: error.message, transient: error.transient };
  return { key, message: describeStoreError(error).text, transient: false };
}
