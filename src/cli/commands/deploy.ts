import { InvalidArgumentError, type Command } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { RunSettings } from '../../config/run-settings.js';
import type { SiteConfig } from '../../config/site-config.js';
import { VIDFEEDS_VERSION } from '../../config/version.js';
import { FORMATS } from '../../formats/registry.js';
import { SitePaths } from '../../paths/site-paths.js';
import { checkPlaces } from '../../paths/url-scheme.js';
import { defaultStateFile } from '../../pipeline/build-state.js';
import { BuildInterrupted } from '../../pipeline/interrupt.js';
import { describeHolder, LockHeldError, waitForBuildLock, type BuildLock } from '../../lock/lock.js';
import { parseShard, shardStateFile, type ShardSpec } from '../../shard/shard.js';
import { cacheControlOf } from '../../hosting/cache-control.js';
import { manifestEntries, type ManifestArgs } from '../../hosting/manifest.js';
import { changedDocuments, SNAPSHOT_BYTES } from '../../deploy/changed-documents.js';
import type { RouteMatch } from '../../hosting/routes.js';
import type { Format } from '../../formats/format.js';
import { isEncoding } from '../../paths/compression.js';
import type { StateChanges } from '../../pipeline/state-changes.js';
import { chooseBasis, configFingerprint } from '../../deploy/deploy-basis.js';
import type { PublishedState } from '../../deploy/deploy-record.js';
import { routesOf, type Routes } from '../../hosting/routes.js';
import type { Manifest } from '../../hosting/manifest.js';
import { websubLinkOfMatch } from '../../hosting/websub-links.js';
import { notifySettingsOf } from '../../deploy/change-set.js';
import { ownedDocumentOf } from '../../deploy/deploy-plan.js';
import { deliverOwed, listenersOf, oweChanges, type Listener } from '../../deploy/owed-notifications.js';
import { DeployRecord } from '../../deploy/deploy-record.js';
import type { Delivery } from '../../deploy/notify.js';
import { showTarget, type StoreTarget } from '../../deploy/object-store.js';
import { deployTargetOf } from '../deploy-target.js';
import type { DeployReport, DeployRequest as StoreDeploy } from '../../deploy/run-deploy.js';
import { describeStoreError, refusedForSettings, StoreRequestError } from '../../deploy/store-requests.js';
import { EXIT, UsageError } from '../errors.js';
import { VidfeedsError } from '../../config/vidfeeds-error.js';
import { reportHead } from '../json-report.js';
import { exitCodeOfSignal, runCommand, waitSeconds, type CommandRun, type Ending, type StopListener } from '../command-runner.js';
import { quietAwsSdkNodeNotice } from '../environment.js';
import type { Console } from '../output.js';
import { reportDeliveries } from '../notify-report.js';
import { configOptions, outOf, positiveInteger, readSettings, stateOf, type ConfigFlags } from './shared-options.js';

interface DeployFlags extends ConfigFlags {
  out?: string;
  state?: string;
  to?: string;
  endpoint?: string;
  shard?: string;
  dryRun?: boolean;
  verify?: boolean;
  json?: boolean;
  quiet?: boolean;
  concurrency: number;
  tries: number;
  timeout: number;
  onChange?: string;
  notify: boolean;
  record?: string;
  wait: number;
}

/** The documents an incremental deploy reads: those the builds since changed, added and removed. */
type IncrementalFiles = NonNullable<StoreDeploy['incremental']>;

/** The tree's documents as the deploy reads them: all of them one at a time, or the changed ones. */
type DeployManifest = StoreDeploy['manifest'];

interface DeployRequest {
  out: string;
  target: StoreTarget;
  endpoint?: string;
  shard?: ShardSpec;
  recordFile: string;
  stateFile: string;
}

/**
 * `vidfeeds deploy`: publishes the built tree to an S3-compatible object store in the order of
 * src/deploy/deploy-plan.ts, writing only what differs, then tells hubs, IndexNow and the
 * `--on-change` command what changed (docs/deploy.md, "Deploying to an object store").
 */
export function registerDeploy(program: Command, io: Console, setExit: (code: number) => void): void {
  configOptions(
    program
      .command('deploy')
      .description('publish the built tree to an S3-compatible object store: only what changed, in an order no reader can catch half-done')
      .option('--out <dir>', 'the built tree (default: out in the configuration, else out)')
      .option('--state <file>', 'the build state of the tree, which says what the builds changed (default: state in the configuration, else the one build keeps beside the tree)')
      .option('--to <s3://bucket/prefix>', 'the bucket, and the prefix the tree goes under (default: deploy.to in the configuration)')
      .option('--endpoint <url>', 'an S3-compatible endpoint other than AWS (R2, MinIO, Garage, Ceph): path-style requests (default: deploy.endpoint in the configuration)')
      .option('--shard <K/N>', 'deploy only part K of N (site-wide files from part 1); see docs/scale.md')
      .option('--dry-run', 'compare and print what would be written and deleted; write nothing')
      .option('--verify', "compare the whole tree with the store's listing, whatever the last deploy recorded")
      .option('--concurrency <n>', 'requests at once', positiveInteger('--concurrency', 256), 16)
      .option('--tries <n>', 'tries per request on throttling and transient errors, with back-off', positiveInteger('--tries', 20), 6)
      .option('--timeout <seconds>', 'longest wait for the answer to one request: a store that does not answer in time ends the deploy (exit 75)', positiveSeconds('--timeout'), 30)
      .option('--on-change <command>', 'run COMMAND (through sh) with every changed or removed URL on its standard input, one per line')
      .option('--no-notify', 'do not notify WebSub hubs or IndexNow (configured with notifyAfter: "deploy")')
      .option('--record <file>', 'what the last deploy published, per target (default: .vidfeeds/<out>.deploy.json beside the tree); what is owed to listeners is kept beside it, in the same name less .json plus .owed.sqlite')
      .option('--wait <seconds>', 'when a build of the tree holds its lock, wait up to this long', waitSeconds, 0)
      .option('--json', 'print one JSON report on stdout')
      .option('--quiet', 'print only problems'),
  ).action((flags: DeployFlags) =>
    runCommand({ name: 'deploy', json: flags.json, io, setExit }, async (runner) => {
      const { site, run } = readSettings(flags, io);
      return deploy(site, deployRequest(flags, run), flags, io, runner);
    }),
  );
}

/**
 * Where the deploy reads and publishes, each flag winning over its setting in the configuration
 * (`out`, `state`, `deploy.to`, `deploy.endpoint`), as `build` and `watch --deploy` read them.
 * The build state must be the one the builds of the tree keep, or every deploy is a full compare.
 */
function deployRequest(flags: DeployFlags, run: RunSettings): DeployRequest {
  const chosen = deployTargetOf({ to: flags.to, endpoint: flags.endpoint }, run.deploy, '--to');
  if (chosen === null) throw new UsageError('--to is required (or set deploy.to in the configuration): the bucket, and the prefix the tree goes under, as s3://BUCKET or s3://BUCKET/PREFIX');
  const out = outOf(flags.out, run);
  if (!existsSync(out) || !statSync(out).isDirectory()) throw new UsageError(`--out ${out} is not a directory: build the tree first`);
  let shard: ShardSpec | undefined;
  if (flags.shard !== undefined) {
    const parsed = parseShard(flags.shard);
    if ('problem' in parsed) throw new UsageError(`--shard: ${parsed.problem}`);
    shard = parsed;
  }
  // The build's record of what it wrote, where build keeps it; the deploy record beside the default one.
  const besideTree = shardStateFile(defaultStateFile(out), shard);
  const stateFile = stateOf(flags.state, run) ?? besideTree;
  const recordFile = resolve(flags.record ?? besideTree.replace(/\.state\.sqlite$/, '.deploy.json'));
  // One store however its endpoint is spelt, with a trailing slash or without: one target in the record.
  const endpoint = chosen.endpoint?.replace(/\/+$/, '');
  return { out, target: chosen.target, endpoint, shard, recordFile, stateFile };
}

/** What one deploy run carries from phase to phase. */
interface DeployRun {
  stop: StopListener;
  started: bigint;
  record: DeployRecord;
  recordId: string;
  listeners: Listener[];
  /** Lets builds of the tree go on: the deploy reads no more of it. */
  releaseTree: () => void;
}

async function deploy(config: SiteConfig, request: DeployRequest, flags: DeployFlags, io: Console, runner: CommandRun): Promise<Ending> {
  checkPlaces(FORMATS);
  const started = process.hrtime.bigint();
  const paths = new SitePaths(config.baseUrl, config.pages, FORMATS);
  const routes = routesOf(FORMATS);
  // Heard in every phase: the tree is read a few files at a time, and the requests under way are aborted.
  const stop = runner.stopOnSignal((name) => io.log.warn(`${name}: stopping the deploy, aborting the requests under way…`));
  let recordLock: BuildLock;
  try {
    recordLock = await waitForRecordLock(request.recordFile, flags.wait ?? 0, stop, io);
  } catch (error) {
    stop.release();
    throw error;
  }
  const record = new DeployRecord(request.recordFile);
  // Closed however the deploy ends: what is owed is on the disk after each of its commits.
  try {
    const recordId = recordIdOf(request);
    // Hubs and IndexNow hear of a deploy's changes when they are to (notifyAfter: "deploy", no --no-notify).
    const toListeners = flags.notify && config.notifyAfter === 'deploy';
    const settings = notifySettingsOf(config, paths, flags.onChange);
    if (!toListeners) Object.assign(settings, { hubs: [], indexNow: null });
    const listeners = listenersOf(settings);
    // The tree stays as one build left it while it is read: a build waits, or this does, and a
    // signal ends the wait at once. An incremental deploy lets builds go on once it holds the bytes it sends.
    const lock = await waitForBuildLock(request.out, { command: 'vidfeeds deploy' }, {
      seconds: flags.wait ?? 0,
      waiting: (held) => io.log.debug(`waiting up to ${flags.wait} s for the lock: ${held.what}`),
      stop: () => {
        const signal = stop.requested();
        return signal === null ? null : new BuildInterrupted(signal, ' while waiting for the lock: nothing was published');
      },
    });
    let report: DeployReport;
    try {
      report = await compareAndPublish(config, paths, routes, request, flags, { stop, started, record, recordId, listeners, releaseTree: () => lock.release() });
    } finally {
      lock.release();
    }
    // After a stop, what is owed stays recorded for the next run: a signal is obeyed at once, in the
    // deliveries too (the request under way is aborted, a hook stopped, the rest stays owed).
    const deliveries =
      report.dryRun || report.stoppedBy !== null
        ? []
        : await deliverOwed({
            store: record.owed,
            target: recordId,
            listeners,
            isForgotten: (id) => toListeners && !id.startsWith('on-change'),
            pending: pendingFiles(report, routes, request),
            paths,
            routes,
            options: { userAgent: `vidfeeds/${VIDFEEDS_VERSION}`, stop: stop.aborted },
          });
    report.stoppedBy ??= stop.requested();
    const exitCode = exitCodeOfDeploy(report, deliveries);
    const owed = record.owed.count(recordId);
    printReport(report, deliveries, owed, exitCode, flags, io);
    return { exitCode, report: () => deployJson(report, deliveries, owed, exitCode) };
  } finally {
    stop.release();
    record.close();
    recordLock.release();
  }
}

/**
 * One deploy at a time from a deploy record (every target it names): two deploys of one tree to
 * one store would race, the older bytes of the first landing after the second's newer ones, and
 * each would write the record from its own copy. The lock is the record's name plus `.lock`, held
 * until the record and what is owed are written; a deploy that finds it held waits `--wait`
 * seconds, then exits 75.
 */
async function waitForRecordLock(recordFile: string, seconds: number, stop: StopListener, io: Console): Promise<BuildLock> {
  const file = `${recordFile}.lock`;
  try {
    return await waitForBuildLock(recordFile, { file, command: 'vidfeeds deploy', announced: false }, {
      seconds,
      waiting: (held) => io.log.debug(`waiting up to ${seconds} s for the deploy record: ${held.holder === null ? file : describeHolder(held.holder)}`),
      stop: () => {
        const signal = stop.requested();
        return signal === null ? null : new BuildInterrupted(signal, ' while waiting for another deploy: nothing was published');
      },
    });
  } catch (error) {
    if (!(error instanceof LockHeldError)) throw error;
    throw new VidfeedsError(EXIT.tempfail, {
      what:
        error.holder === null
          ? `the deploy record ${recordFile} is locked by ${file}, which is not a vidfeeds lock file`
          : `another deploy of this tree is running (${describeHolder(error.holder)}): it holds ${file}`,
      hint: error.holder === null ? 'if no deploy is running, remove it' : 'wait for it to finish (--wait SECONDS)',
    });
  }
}

/** Reads what changed in the tree since the store was last in step with it (or all of it), and publishes it. */
async function compareAndPublish(config: SiteConfig, paths: SitePaths, routes: Routes, request: DeployRequest, flags: DeployFlags, run: DeployRun): Promise<DeployReport> {
  const basis = chooseBasis({ stateFile: request.stateFile, out: request.out, config: fingerprintOf(config, paths, request), verify: flags.verify ?? false, known: run.record.get(run.recordId) });
  const manifestArgs: ManifestArgs = [
    routes,
    request.out,
    decodeURIComponent(paths.basePath),
    `vidfeeds ${VIDFEEDS_VERSION}`,
    (format: Format) => cacheControlOf(config.cacheControl, format),
    (match: RouteMatch) => websubLinkOfMatch(config.websub.hubs, paths, match),
  ];
  let built: { manifest: DeployManifest; incremental?: IncrementalFiles };
  try {
    // A full compare reads the tree one file at a time while it plans (src/deploy/full-compare.ts).
    built =
      basis.mode === 'incremental'
        ? await changedSince(basis.state, basis.since, run.stop.aborted, manifestArgs)
        : { manifest: { files: manifestEntries(run.stop.aborted, ...manifestArgs) } };
  } finally {
    basis.state?.close();
  }
  const report = await publish(built.manifest, routes, request, flags, { ...run, published: basis.published, incremental: built.incremental });
  report.mode = basis.mode;
  report.reason = basis.mode === 'full' ? basis.reason : `the builds after build ${basis.since}`;
  return report;
}

/** Documents not in the store as the tree has them yet (their writes failed or were not attempted): owed, not sent. */
function* pendingFiles(report: DeployReport, routes: Routes, request: DeployRequest): Iterable<string> {
  const keys = function* () {
    yield* report.notAttempted;
    for (const failure of report.failed) yield failure.key;
  };
  for (const key of keys()) {
    const file = ownedDocumentOf(routes, request.target.prefix, key, request.shard);
    if (file !== null) yield file;
  }
}

/** Publishes the manifest through the S3 store, under the stop signal. */
async function publish(
  manifest: DeployManifest,
  routes: Routes,
  request: DeployRequest,
  flags: DeployFlags,
  run: DeployRun & { published: PublishedState | null; incremental: IncrementalFiles | undefined },
): Promise<DeployReport> {
  quietAwsSdkNodeNotice();
  const { S3Store } = await import('../../deploy/s3-store.js');
  const { runDeploy } = await import('../../deploy/run-deploy.js');
  const store = new S3Store({ target: request.target, endpoint: request.endpoint, policy: { tries: flags.tries, timeoutMs: flags.timeout * 1000, stop: run.stop.aborted }, concurrency: flags.concurrency });
  try {
    return await runDeploy({
      out: request.out,
      manifest,
      routes,
      target: request.target,
      store,
      shard: request.shard,
      concurrency: flags.concurrency,
      dryRun: flags.dryRun ?? false,
      record: run.record,
      recordId: run.recordId,
      stopRequested: run.stop.requested,
      // Only listeners are owed the changed documents, and only --json lists the keys: both grow with the site.
      ...(run.listeners.length === 0 ? {} : { beforeWrites: (changed: Iterable<string>, removed: Iterable<string>) => oweChanges(run.record.owed, run.recordId, run.listeners, routes, changed, removed) }),
      listKeys: flags.json === true,
      startedAt: run.started,
      treeRead: run.releaseTree,
      published: run.published,
      ...(run.incremental === undefined ? {} : { incremental: run.incremental }),
    });
  } catch (error) {
    throw storeError(error, request.target);
  } finally {
    store.close();
  }
}

/**
 * The documents the builds after `since` changed, each read once, and those they added and
 * removed. Stopped part-way, it returns what it read (the deploy then writes nothing and reports
 * the stop); a document missing or not as the build wrote it stops the deploy before any request.
 */
async function changedSince(state: StateChanges, since: number, stop: AbortSignal, manifestArgs: ManifestArgs): Promise<{ manifest: Manifest; incremental: IncrementalFiles }> {
  const encodings = (state.compression ?? '').split(',').filter(isEncoding);
  const changed = await changedDocuments(state, since, { encodings, stop, snapshotBytes: SNAPSHOT_BYTES }, ...manifestArgs);
  if (changed.unlike.length > 0 && !changed.stopped) {
    const { unlike } = changed;
    // Sent as they are, they would be published wrong and stay so: once a build restores them,
    // their record, and so the change the next deploy sends, is the one it was.
    throw new VidfeedsError(EXIT.usage, {
      what: `the tree is not as the builds left it, so nothing was published: ${unlike.slice(0, 5).join('; ')}${unlike.length > 5 ? `; and ${unlike.length - 5} more` : ''}`,
      hint: '`vidfeeds build --full` writes them again; then deploy',
    });
  }
  const { manifest, newFiles, removedFiles, bodies } = changed;
  return { manifest, incremental: { newFiles, removedFiles, encodings, bodies } };
}

/** What decides the objects' bytes and headers beside the tree: a change of any sends the next deploy to a full compare. */
function fingerprintOf(config: SiteConfig, paths: SitePaths, request: DeployRequest): string {
  return configFingerprint({
    vidfeeds: VIDFEEDS_VERSION,
    base: paths.base,
    cacheControl: config.cacheControl,
    hubs: config.websub.hubs,
    indexNowKey: config.indexNow.key,
    target: showTarget(request.target),
    endpoint: request.endpoint ?? null,
    shard: request.shard === undefined ? null : `${request.shard.index}/${request.shard.count}`,
  });
}

function recordIdOf(request: DeployRequest): string {
  return `${request.endpoint ?? 'aws'} ${showTarget(request.target)}${request.shard === undefined ? '' : ` part ${request.shard.index}/${request.shard.count}`}`;
}

/** 128 + the signal's number when stopped; 75 when only the store's unavailability failed it; 1 for any other failure. */
function exitCodeOfDeploy(report: DeployReport, deliveries: readonly Delivery[]): number {
  if (report.stoppedBy !== null) return exitCodeOfSignal(report.stoppedBy);
  // Refused for the credentials or the bucket (an incremental deploy meets it at its first write, not a listing): 2, as when the listing is refused.
  if (report.failed.some((f) => f.refused === true)) return EXIT.usage;
  if (report.failed.length > 0 && report.failed.every((f) => f.transient)) return EXIT.tempfail;
  if (report.failed.length > 0 || report.notAttempted.length > 0 || deliveries.some((d) => !d.ok)) return EXIT.failed;
  return EXIT.ok;
}

/** What a deploy did, on stderr: each failure, what was left, the notifications, the summary. */
function printReport(report: DeployReport, deliveries: readonly Delivery[], owed: number, exitCode: number, flags: DeployFlags, io: Console): void {
  for (const failure of report.failed) io.log.error(`${failure.action === 'delete' ? 'not deleted' : 'not written'}: ${failure.key}: ${failure.message}`);
  if (report.failed.some((f) => f.refused === true)) io.log.error(`the store refused the writes: ${CHECK_SETTINGS}`);
  if (report.notAttempted.length > 0) io.log.error(notAttemptedLine(report, flags.json === true));
  if (report.unorderedListing !== null) {
    const { before, after } = report.unorderedListing;
    io.log.warn(
      `the store listed ${after} after ${before}, out of S3's key order, so its listing may leave objects out: ` +
        `objects missing from it were asked for one by one (${report.checked} asked in all), and objects to delete that it left out stay`,
    );
  }
  reportDeliveries(deliveries, io);
  if (owed > 0 && !report.dryRun) io.log.warn(`${owed} changed or removed documents are still owed to hubs, IndexNow or --on-change: the next deploy sends them`);
  if (exitCode !== EXIT.ok) io.log.error(deploySummary(report));
  else if (!flags.quiet) io.log.info(deploySummary(report));
}

/**
 * The --json report of a deploy (docs/report.md), in pieces: its key lists are read back from
 * where the deploy kept them (src/deploy/key-list.ts) as they are printed, never held whole.
 */
function* deployJson(report: DeployReport, deliveries: readonly Delivery[], owed: number, exitCode: number): Iterable<string> {
  const fields = (value: object) => JSON.stringify(value).slice(1, -1);
  yield `{${fields({
    ...reportHead('deploy', exitCode),
    target: report.target,
    dryRun: report.dryRun,
    mode: report.mode,
    reason: report.reason,
    seconds: report.seconds,
    counts: {
      documents: report.documents,
      objects: report.objects,
      uploaded: report.uploaded.new + report.uploaded.changed + report.uploaded.site,
      uploadedNew: report.uploaded.new,
      uploadedChanged: report.uploaded.changed,
      uploadedSite: report.uploaded.site,
      bytesUploaded: report.bytesUploaded,
      deleted: report.deleted,
      unchanged: report.unchanged,
      checked: report.checked,
      failed: report.failed.length,
      notAttempted: report.notAttempted.length,
    },
  })},"uploaded":`;
  yield* report.uploadedKeys.jsonPieces();
  yield ',"deleted":';
  yield* report.deletedKeys.jsonPieces();
  yield `,${fields({ failed: report.failed })},"notAttempted":`;
  yield* report.notAttempted.jsonPieces();
  yield `,${fields({ unorderedListing: report.unorderedListing, notifications: deliveries, notificationsOwed: owed })}}`;
}

/** What was not attempted, in one line: how many, why, the first few keys. */
function notAttemptedLine(report: DeployReport, json: boolean): string {
  const why = report.stoppedBy !== null ? `the deploy was stopped by ${report.stoppedBy}` : 'a request failed, and what follows would link to what is missing';
  const shown = report.notAttempted.first(3).join(', ');
  const more = report.notAttempted.length > 3 ? `, … (${json ? '`notAttempted` in the report' : '--json'} lists them all)` : '';
  return `not attempted: ${report.notAttempted.length} ${report.notAttempted.length === 1 ? 'object' : 'objects'} (${why}): ${shown}${more}`;
}

/** One line: where, what was written, deleted and left, in how long. */
export function deploySummary(report: DeployReport): string {
  const verb = report.dryRun ? 'would upload' : 'uploaded';
  const { new: added, changed, site } = report.uploaded;
  const parts = [
    `${verb} ${added + changed + site} objects (${added} of new documents, ${changed} of changed documents, ${site} site-wide)`,
    `${report.dryRun ? 'would delete' : 'deleted'} ${report.deleted}`,
    `${report.unchanged} unchanged`,
  ];
  if (report.failed.length > 0) parts.push(`${report.failed.length} failed`);
  if (report.notAttempted.length > 0) parts.push(`${report.notAttempted.length} not attempted`);
  const head = report.stoppedBy === null ? '' : `stopped by ${report.stoppedBy}: `;
  const mode = report.mode === 'incremental' ? `incremental (${report.reason})` : `full compare${report.reason === null ? '' : ` (${report.reason})`}`;
  return `${head}deploy to ${report.target}, ${mode}: ${report.documents} documents, ${report.objects} objects in ${report.seconds.toFixed(2)}s: ${parts.join(', ')}`;
}

/** A store that cannot be reached is worth another try (75); a refusal is the operator's to fix (2). */
const CHECK_SETTINGS = "check the bucket, the endpoint and the credentials of the AWS SDK's chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE";

function storeError(error: unknown, target: StoreTarget): Error {
  const where = showTarget(target);
  const described = error instanceof StoreRequestError ? { text: error.message, status: error.status, code: error.code } : describeStoreError(error);
  const { text: what, status, code } = described;
  if (refusedForSettings(status, code)) return new VidfeedsError(EXIT.usage, { what, where, hint: CHECK_SETTINGS });
  return new VidfeedsError(EXIT.tempfail, { what, where, hint: 'try again later' });
}

function positiveSeconds(flag: string): (value: string) => number {
  return (value) => {
    if (!/^\d+(\.\d+)?$/.test(value) || Number(value) <= 0) throw new InvalidArgumentError(`${flag} needs a number of seconds above 0`);
    return Number(value);
  };
}
