import { showName } from '../paths/names.js';
import type { ChangeLogPosition } from '../db/change-log.js';
import type { BuildMode } from './incremental.js';

/**
 * What a build tells its caller: the counts of its summary, the rows it skipped and the documents
 * that failed. Every stage reports through one `ReportTally`, which keeps the lists bounded.
 */

/** How many skipped rows and failures a report keeps in full; the rest are only counted. */
export const REPORT_KEEPS = 100;

export interface Skipped {
  kind: 'user' | 'video';
  key: string;
  reason: string;
  /** The reason is about the name (it cannot be a path), not the row's other data. */
  isName: boolean;
}

export interface Failure {
  format: string;
  key: string;
  path: string;
  message: string;
}

export interface BuildReport {
  written: number;
  unchanged: number;
  removed: number;
  /** The first REPORT_KEEPS skipped rows; `skippedCount` counts them all. */
  skipped: Skipped[];
  skippedCount: number;
  /** The first REPORT_KEEPS failures; `failedCount` counts them all. */
  failed: Failure[];
  failedCount: number;
  documents: number;
  bytesWritten: number;
  seconds: number;
  mode: BuildMode;
  /** Why the build was full, incremental or partial. */
  reason: string;
  /** Incremental builds: how many changes were applied and how many owners they affected. */
  changes?: number;
  owners?: { users: number | 'all'; videos: number | 'all'; siteFiles: boolean; unknownTables: readonly string[] };
  /** The change log as the build's snapshot read it: what the tree is as of (absent without a change log). */
  snapshot?: ChangeLogPosition;
}

export interface BuildReporter {
  /** Called now and then with the number of documents done. */
  progress?(done: number): void;
  /** A row that was skipped or a document that failed, as it happens. */
  warn?(message: string): void;
}

/** An unpublishable row under --strict. Exit code 1. */
export class StrictModeError extends Error {
  constructor(readonly skipped: Skipped) {
    super(`${skipped.kind} ${showName(skipped.key)} cannot be published: ${describeSkip(skipped)} (--strict makes this fatal)`);
    this.name = 'StrictModeError';
  }
}

export function describeSkip(skipped: Skipped): string {
  return skipped.isName ? `its name ${skipped.reason}` : `it ${skipped.reason}`;
}

/** How often, in documents, the reporter hears of progress. */
const PROGRESS_EVERY = 500;

/** Collects what the stages report into one BuildReport, and passes it on to the reporter. */
export class ReportTally {
  readonly report: BuildReport = {
    written: 0,
    unchanged: 0,
    removed: 0,
    skipped: [],
    skippedCount: 0,
    failed: [],
    failedCount: 0,
    documents: 0,
    bytesWritten: 0,
    seconds: 0,
    mode: 'full',
    reason: '',
  };
  private lastProgress = 0;

  constructor(
    private readonly reporter: BuildReporter | undefined,
    private readonly strict: boolean,
  ) {}

  /** A row that cannot be published: skipped and reported, or, under --strict, the end of the build. */
  skip(skipped: Skipped): void {
    if (this.strict) throw new StrictModeError(skipped);
    // Kept in memory up to a cap, counted beyond: a site of bad rows must not grow the build.
    if (++this.report.skippedCount <= REPORT_KEEPS) this.report.skipped.push(skipped);
    this.reporter?.warn?.(`skipped ${skipped.kind} ${showName(skipped.key)}: ${describeSkip(skipped)}`);
  }

  /** A document that could not be rendered; `where` names it in the warning (`rss of "alice" (alice/rss/index.rss)`). */
  fail(failure: Failure, where: string): void {
    if (++this.report.failedCount <= REPORT_KEEPS) this.report.failed.push(failure);
    this.reporter?.warn?.(`failed: ${where}: ${failure.message}`);
  }

  /** A document rendered and either written or found unchanged. */
  document(written: boolean, bytes: number): void {
    const { report } = this;
    if (written) {
      report.written++;
      report.bytesWritten += bytes;
    } else {
      report.unchanged++;
    }
    report.documents++;
    if (this.reporter?.progress && report.documents - this.lastProgress >= PROGRESS_EVERY) {
      this.lastProgress = report.documents;
      this.reporter.progress(report.documents);
    }
  }

  removed(count: number): void {
    this.report.removed += count;
  }
}
