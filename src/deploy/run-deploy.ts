import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keysOf, routeOfFile } from '../hosting/manifest.js';
import { isCompressible, type Encoding } from '../paths/compression.js';
import { byCodePoint } from '../db/by-code-point.js';
import { ownedDocumentOf, ownsMatch, planDocument, type PlannedDocument, type PlannedObject } from './deploy-plan.js';
import { headersFingerprint, type PublishedState } from './deploy-record.js';
import { fullCompare, type CompareRequest } from './full-compare.js';
import { showTarget } from './object-store.js';
import { runPoolFrom } from './pool.js';
import { describeStoreError, refusedForSettings, StopRequested, StoreRequestError } from './store-requests.js';
import { KeyList } from './key-list.js';
import { incrementalPlan, type PendingDocument, type Source, type StepKind, type WritePlan } from './write-plan.js';

/**
 * One deploy of a built tree to an object store: compare, then write in the safe order of
 * src/deploy/deploy-plan.ts, then delete. An object is written only when the store does not
 * already hold its bytes with its headers (by the MD5 ETag and the SHA-256 kept in its metadata,
 * never by times). An object that could not be written (after its tries, src/deploy/store-requests.ts)
 * halts the deploy: no other request starts, since the later steps would link to it or delete what
 * still links. A stop request (SIGINT, SIGTERM) aborts the requests under way and starts no other.
 * The next deploy compares again, so it resumes where this one stopped.
 */

export interface DeployRequest extends CompareRequest {
  /** The tree (the `--out` of the build). */
  out: string;
  dryRun: boolean;
  /**
   * Called once the comparison is done, before the first write, with the documents about to
   * change for readers (written, removed): what the listeners will be owed. Both are read from
   * the plan as they are iterated, `changed` to its end before `removed`, and only during the call.
   */
  beforeWrites?: (changed: Iterable<string>, removed: Iterable<string>) => void;
  /**
   * An incremental deploy (src/deploy/deploy-basis.ts): the manifest holds only the documents the
   * builds since the last deploy changed, every object of which is written, without listing the
   * store; `newFiles` are those added since, `removedFiles` those removed, whose keys are deleted.
   */
  incremental?: {
    newFiles: ReadonlySet<string>;
    removedFiles: readonly string[];
    encodings: readonly Encoding[];
    /** The bytes of the changed files by file, read with their hashes; null when they came to more than changed-documents.ts's SNAPSHOT_BYTES (read as they are sent). */
    bodies: ReadonlyMap<string, Buffer> | null;
  };
  /** Recorded for the target once everything planned was done: the build state the store now holds. */
  published?: PublishedState | null;
  /** When the deploy began (before the tree was read), for its reported seconds. */
  startedAt?: bigint;
  /**
   * Called once the deploy reads nothing more of the tree: an incremental deploy that holds the
   * bytes it sends (up to changed-documents.ts's SNAPSHOT_BYTES) calls it before its first request, so that a build can
   * change the tree while the objects go up; otherwise nothing calls it.
   */
  treeRead?: () => void;
  /** Each object written or deleted, as it happens. */
  progress?: (event: { key: string; action: 'uploaded' | 'deleted' }) => void;
  /** Whether the report lists every key written and deleted (the default), or only counts them. */
  listKeys?: boolean;
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
  /**
   * Keys written (or, in a dry run, to write), and deleted (or to delete); empty without
   * `listKeys`. Kept in bounded memory (src/deploy/key-list.ts): a first deploy lists every key.
   */
  uploadedKeys: KeyList;
  deletedKeys: KeyList;
  /** Objects that could not be written or deleted, with why. */
  failed: DeployFailure[];
  /** Objects not attempted, because an earlier step failed or the deploy was stopped: all of them, when that was early in a first deploy. */
  notAttempted: KeyList;
  stoppedBy: 'SIGINT' | 'SIGTERM' | null;
  seconds: number;
}

export interface DeployFailure {
  key: string;
  /** What was asked of the store: to write the object, or to delete it. */
  action: 'write' | 'delete';
  message: string;
  /** Whether the store may take it later (throttling, server errors, no connection, no answer). */
  transient: boolean;
  /** Whether the store refused it for the credentials or the bucket (store-requests.ts's `refusedForSettings`). */
  refused?: boolean;
}

const DELETE_BATCH = 1000;

export async function runDeploy(request: DeployRequest): Promise<DeployReport> {
  const started = request.startedAt ?? process.hrtime.bigint();
  const report = emptyReport(showTarget(request.target), request.dryRun);
  const finish = () => {
    report.stoppedBy = request.stopRequested?.() ?? null;
    report.seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return report;
  };
  let plan: WritePlan;
  let bodies: ReadonlyMap<string, Buffer> | null = null;
  try {
    if (request.incremental === undefined) {
      plan = await fullCompare(request, report);
    } else {
      plan = await incrementalCompare(request, request.incremental);
      bodies = request.dryRun ? new Map() : request.incremental.bodies;
      if (bodies !== null) request.treeRead?.();
    }
  } catch (error) {
    // A stop during the comparison: nothing was written, and what would have been is not known yet.
    if (error instanceof StopRequested) return finish();
    throw error;
  }
  try {
    await publishPlan({ ...request, bodies }, plan, report);
  } finally {
    plan.close();
  }
  return finish();
}

/** Writes in the safe order, then deletes; records the target once everything planned was done. */
async function publishPlan(request: Publishing, plan: WritePlan, report: DeployReport): Promise<void> {
  Object.assign(report, { documents: plan.documents, objects: plan.objects, unchanged: plan.unchanged, checked: plan.checked });
  if (!request.dryRun) request.beforeWrites?.(plan.changedForReaders(), removedFiles(request, plan));

  const state: WriteState = { etagsAreMd5: plan.known?.etagsAreMd5 ?? true, halted: false, beforeFirstWrite: request.incremental === undefined ? () => unvouch(request, plan) : null };
  // The keys of what a step has left, read from the plan a page at a time.
  const keysOf = function* (documents: Source<PendingDocument>) {
    for (let document = documents(); document !== undefined; document = documents()) for (const object of document.writes) yield object.key;
  };
  for (const step of plan.steps()) {
    if (!halted(request, state)) await runPoolFrom(step.documents, request.concurrency, (document) => writeDocument(request, document, step.kind, report, state), () => halted(request, state));
    // What the step did not start (all of it after a failure or a stop).
    report.notAttempted.pushAll(keysOf(step.documents));
  }

  if (halted(request, state)) {
    const batches = plan.deletions(DELETE_BATCH);
    for (let batch = batches(); batch !== undefined; batch = batches()) report.notAttempted.push(...batch);
  } else {
    await deleteAll(request, plan, report, state);
  }
  if (!request.dryRun && report.failed.length === 0 && report.notAttempted.length === 0 && request.stopRequested?.() == null) {
    const published = request.published ?? undefined;
    request.record.set(request.recordId, { headers: plan.fingerprint, etagsAreMd5: state.etagsAreMd5, ...(published === undefined ? {} : { published }) });
  }
}

/**
 * The documents this deploy removes for readers: those a deleted key publishes that the tree no
 * longer has, read from the plan a batch at a time. A document's keys mostly follow one another
 * in key order, so it mostly comes once; a repeat is owed once all the same.
 */
function* removedFiles(request: DeployRequest, plan: WritePlan): Iterable<string> {
  const batches = plan.deletions(DELETE_BATCH);
  let last: string | null = null;
  for (let batch = batches(); batch !== undefined; batch = batches()) {
    for (const key of batch) {
      const file = ownedDocumentOf(request.routes, request.target.prefix, key, request.shard);
      if (file === null || file === last) continue;
      last = file;
      if (!plan.isPlanned(file)) yield file;
    }
  }
}

/** An incremental deploy's plan: every object of the changed documents to write, the removed documents' keys to delete. */
async function incrementalCompare(request: DeployRequest, changes: NonNullable<DeployRequest['incremental']>): Promise<WritePlan> {
  const documents: PlannedDocument[] = [];
  for await (const entry of request.manifest.files) {
    const document = planDocument(entry, request.routes, request.target.prefix, request.shard);
    if (document !== null) documents.push(document);
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
  const plan = incrementalPlan(documents, changes.newFiles, [...deletions].sort(byCodePoint), {
    known,
    // The headers are the last deploy's: the basis's configuration fingerprint is unchanged.
    fingerprint: known?.headers ?? headersFingerprint(documents),
  });
  return plan;
}

/** A deploy as it writes: with the bytes it holds, when it read them before its first request. */
type Publishing = DeployRequest & { bodies: ReadonlyMap<string, Buffer> | null };

interface WriteState {
  etagsAreMd5: boolean;
  /** An object failed: no other request starts. */
  halted: boolean;
  /** Called once, before the first write or deletion is sent. */
  beforeFirstWrite: (() => void) | null;
}

function firstWrite(state: WriteState): void {
  const call = state.beforeFirstWrite;
  state.beforeFirstWrite = null;
  call?.();
}

/**
 * A full compare is about to change the store: until it has done everything it planned, the record
 * vouches for nothing. Stopped or failed part-way, it leaves objects whose bytes or headers the
 * recorded build and header fingerprint do not describe (another Cache-Control, a tree a killed
 * build left): an incremental deploy would never look at them again, nor, once the configuration
 * is set back, a compare that trusts the listing's ETags under the recorded headers.
 */
function unvouch(request: Publishing, plan: WritePlan): void {
  const known = request.record.get(request.recordId);
  if (known === undefined || (known.published === undefined && known.headers === plan.fingerprint)) return;
  request.record.set(request.recordId, { headers: known.headers === plan.fingerprint ? known.headers : '', etagsAreMd5: known.etagsAreMd5 });
}

function halted(request: Publishing, state: WriteState): boolean {
  return state.halted || request.stopRequested?.() != null;
}

/** Writes a document's objects that differ, its compressed forms first; a failure halts the deploy. */
async function writeDocument(request: Publishing, document: PendingDocument, kind: StepKind, report: DeployReport, state: WriteState): Promise<void> {
  const writes = document.writes;
  for (const [i, object] of writes.entries()) {
    // The document's plain keys must not go up after a form that did not.
    if (halted(request, state)) {
      report.notAttempted.push(...writes.slice(i).map((o) => o.key));
      return;
    }
    try {
      if (!request.dryRun) {
        firstWrite(state);
        const etag = await request.store.put(putOf(request.bodies?.get(object.file) ?? readTreeFile(request.out, object.file), object));
        if (etag !== object.md5) state.etagsAreMd5 = false;
        request.progress?.({ key: object.key, action: 'uploaded' });
      }
      report.uploaded[kind]++;
      report.bytesUploaded += object.size;
      if (request.listKeys !== false) report.uploadedKeys.push(object.key);
    } catch (error) {
      if (error instanceof StopRequested) {
        // Aborted under way: the store may or may not hold it; the next deploy compares again.
        report.notAttempted.push(...writes.slice(i).map((o) => o.key));
        return;
      }
      report.failed.push(failureOf(object.key, 'write', error));
      state.halted = true;
      report.notAttempted.push(...writes.slice(i + 1).map((o) => o.key));
      return;
    }
  }
}

async function deleteAll(request: Publishing, plan: WritePlan, report: DeployReport, state: WriteState): Promise<void> {
  const batches = plan.deletions(DELETE_BATCH);
  await runPoolFrom(
    batches,
    Math.min(request.concurrency, 4),
    async (batch) => {
      let failures: DeployFailure[];
      try {
        if (!request.dryRun) firstWrite(state);
        failures = request.dryRun ? [] : (await request.store.remove(batch)).map((f) => ({ key: f.key, action: 'delete' as const, message: f.message, transient: false }));
      } catch (error) {
        if (error instanceof StopRequested) {
          report.notAttempted.push(...batch);
          return;
        }
        state.halted = true;
        failures = batch.map((key) => failureOf(key, 'delete', error));
      }
      report.failed.push(...failures);
      const failed = new Set(failures.map((f) => f.key));
      for (const key of batch) {
        if (failed.has(key)) continue;
        report.deleted++;
        if (!request.dryRun) request.progress?.({ key, action: 'deleted' });
        if (request.listKeys !== false) report.deletedKeys.push(key);
      }
    },
    () => halted(request, state),
  );
  for (let batch = batches(); batch !== undefined; batch = batches()) report.notAttempted.push(...batch);
}

function readTreeFile(out: string, file: string): Buffer {
  return readFileSync(join(out, ...file.split('/')));
}

function putOf(body: Buffer, object: PlannedObject) {
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
function emptyReport(target: string, dryRun: boolean): DeployReport {
  return {
    target,
    dryRun,
    mode: 'full',
    reason: null,
    documents: 0,
    objects: 0,
    uploaded: { new: 0, changed: 0, site: 0 },
    bytesUploaded: 0,
    deleted: 0,
    unchanged: 0,
    checked: 0,
    unorderedListing: null,
    uploadedKeys: new KeyList(),
    deletedKeys: new KeyList(),
    failed: [],
    notAttempted: new KeyList(),
    stoppedBy: null,
    seconds: 0,
  };
}

function failureOf(key: string, action: DeployFailure['action'], error: unknown): DeployFailure {
  const { text, status, code } = error instanceof StoreRequestError ? { text: error.message, status: error.status, code: error.code } : describeStoreError(error);
  const transient = error instanceof StoreRequestError && error.transient;
  return { key, action, message: text, transient, ...(refusedForSettings(status, code) ? { refused: true } : {}) };
}
