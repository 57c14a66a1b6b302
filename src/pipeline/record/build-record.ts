import { readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ChangeLogPosition } from '../../db/change-log.js';
import type { BuildReport } from '../build-report.js';
import type { BuildFingerprint, BuildMode } from '../plan/incremental.js';
import { FilePlacer } from '../write/output-writer.js';
import type { ShardSpec } from '../../shard/shard.js';
import { EXIT, VidfeedsError } from '../../config/vidfeeds-error.js';

/**
 * What the tree in an output directory was built from, left there by every build that finished:
 * the part of the site (`--shard K/N`), the database and change log position its snapshot read,
 * the fingerprint of version, configuration, format table and templates, and whether it covered
 * its whole part without failures. The parts of a sharded build agree only when they read the same
 * snapshot with the same fingerprint; `vidfeeds shards check` (src/pipeline/shard-check.ts) compares
 * these records before the parts are merged (docs/scale.md).
 *
 * It is a dot file at the root of the output directory: hosts never serve dot files (only the URLs
 * of the format table, src/hosting/routes.ts), no document can be named like it (a key never
 * starts with a dot), and the build state never lists it, so no build prunes it. Parts may share
 * one output directory, so a shard's record carries the part in its name, as its state file does.
 */

/** Version of the record's layout; a reader refuses versions it does not know. */
export const BUILD_RECORD_VERSION = 1;

export interface BuildRecord {
  record: typeof BUILD_RECORD_VERSION;
  /** The part of the site the build covered; null for the whole site. */
  shard: ShardSpec | null;
  /** The database's identity and the change log position inside the build's snapshot. */
  database: { id: string; position: number };
  fingerprint: BuildFingerprint;
  mode: BuildMode;
  /** What a partial build covered (`--only`, `--user`); null when it covered its whole part. */
  partial: { only: string[] | null; user: string | null } | null;
  documents: number;
  failed: number;
  skipped: number;
  /** Not partial and no failed documents: the tree holds its whole part as of the snapshot. */
  complete: boolean;
  /** ISO 8601 time the build finished. */
  finishedAt: string;
}

const PREFIX = '.vidfeeds-build';
const NAME = /^\.vidfeeds-build(?:\.shard-(\d+)-of-(\d+))?\.json$/;

/** `.vidfeeds-build.json`, or `.vidfeeds-build.shard-2-of-8.json` for a part. */
export function buildRecordName(shard: ShardSpec | undefined): string {
  return shard === undefined ? `${PREFIX}.json` : `${PREFIX}.shard-${shard.index}-of-${shard.count}.json`;
}

export function isBuildRecordName(name: string): boolean {
  return NAME.test(name);
}

export interface RecordInput {
  report: BuildReport;
  fingerprint: BuildFingerprint;
  shard: ShardSpec | undefined;
  only: ReadonlySet<string> | undefined;
  user: string | undefined;
  finishedAt: Date;
}

/** The record of a finished build, or null when it read no change log (it cannot say what it read). */
export function buildRecordOf({ report, fingerprint, shard, only, user, finishedAt }: RecordInput): BuildRecord | null {
  const log: ChangeLogPosition | undefined = report.snapshot;
  if (log === undefined) return null;
  const partial = report.mode === 'partial' ? { only: only === undefined ? null : [...only].sort(), user: user ?? null } : null;
  return {
    record: BUILD_RECORD_VERSION,
    shard: shard ?? null,
    database: { id: log.databaseId, position: log.position },
    fingerprint: { ...fingerprint },
    mode: report.mode,
    partial,
    documents: report.documents,
    failed: report.failedCount,
    skipped: report.skippedCount,
    complete: partial === null && report.failedCount === 0,
    finishedAt: finishedAt.toISOString(),
  };
}

/**
 * Puts the record in place whole: written into the writer's staging folder (the same file system;
 * a killed build leaves it there for the next build to clear) and renamed over the old record.
 * Call it while the writer is open, after every document is on disk.
 */
export function writeBuildRecord(out: string, record: BuildRecord): void {
  const root = resolve(out);
  const body = Buffer.from(`${JSON.stringify(record, null, 2)}\n`, 'utf8');
  new FilePlacer(root, `build-record-${process.pid}`).place(join(root, buildRecordName(record.shard ?? undefined)), body);
}

/**
 * Removes the record of this part before a build touches a file: a build that then fails or is
 * killed leaves a tree that is no longer what the record says, and no record is the truth.
 */
export function removeBuildRecord(out: string, shard: ShardSpec | undefined): void {
  try {
    unlinkSync(join(out, buildRecordName(shard)));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** A record that cannot be read or is not one this vidfeeds knows. Exit code 2. */
export class BuildRecordError extends VidfeedsError {
  constructor(message: string, cause?: unknown) {
    super(EXIT.usage, { what: message, cause });
  }
}

export interface FoundRecord {
  /** The record file, as found under the directory given. */
  file: string;
  dir: string;
  record: BuildRecord;
}

/** The build records at the root of `dir`, in name order; throws BuildRecordError for a bad one. */
export function readBuildRecords(dir: string): FoundRecord[] {
  const names = readdirSync(dir)
    .filter(isBuildRecordName)
    .sort();
  return names.map((name) => {
    const file = join(dir, name);
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new BuildRecordError(`${file}: not a build record (${(error as Error).message}); rebuild that part`, error);
    }
    const problem = recordProblem(value);
    if (problem !== null) throw new BuildRecordError(`${file}: ${problem}`);
    const record = value as BuildRecord;
    // The name is how parts sharing a directory stay apart: a renamed or copied record lies.
    if (name !== buildRecordName(record.shard ?? undefined)) {
      throw new BuildRecordError(`${file}: the file is named for another part than the ${describeShard(record.shard)} it records; rebuild that part`);
    }
    return { file, dir, record };
  });
}

function describeShard(shard: ShardSpec | null): string {
  return shard === null ? 'whole site' : `part ${shard.index}/${shard.count}`;
}

/** Why `value` is not a record of this version, or null. */
function recordProblem(value: unknown): string | null {
  if (value === null || typeof value !== 'object') return 'not a build record (not a JSON object)';
  const r = value as Record<string, unknown>;
  if (typeof r.record !== 'number') return 'not a build record (no "record" version)';
  if (r.record !== BUILD_RECORD_VERSION) {
    return `a build record of version ${r.record}, this vidfeeds reads version ${BUILD_RECORD_VERSION}: check with the vidfeeds that built it`;
  }
  const isCount = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
  const isText = (s: unknown) => typeof s === 'string';
  const shard = r.shard as Record<string, unknown> | null | undefined;
  if (shard !== null && (typeof shard !== 'object' || !isCount(shard.index) || !isCount(shard.count) || (shard.index as number) < 1 || (shard.index as number) > (shard.count as number))) {
    return 'malformed build record ("shard")';
  }
  const database = r.database as Record<string, unknown> | undefined;
  if (typeof database !== 'object' || database === null || !isText(database.id) || !isCount(database.position)) return 'malformed build record ("database")';
  const fingerprint = r.fingerprint as Record<string, unknown> | undefined;
  if (typeof fingerprint !== 'object' || fingerprint === null || !['vidfeedsVersion', 'codeHash', 'configHash', 'formatsHash', 'templatesHash'].every((k) => isText(fingerprint[k]))) {
    return 'malformed build record ("fingerprint")';
  }
  if (!['full', 'incremental', 'partial'].includes(r.mode as string)) return 'malformed build record ("mode")';
  const partial = r.partial as Record<string, unknown> | null | undefined;
  if (partial !== null && (typeof partial !== 'object' || !(partial.only === null || Array.isArray(partial.only)) || !(partial.user === null || isText(partial.user)))) {
    return 'malformed build record ("partial")';
  }
  if (!isCount(r.documents) || !isCount(r.failed) || !isCount(r.skipped) || typeof r.complete !== 'boolean' || !isText(r.finishedAt)) {
    return 'malformed build record (counts, "complete" or "finishedAt")';
  }
  return null;
}
