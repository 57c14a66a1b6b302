import { showName } from '../paths/names.js';
import type { ChangeLogPosition } from '../db/change-log.js';
import { describeIssue, type ValueIssue } from '../db/decode.js';
import type { BuildMode } from './plan/incremental.js';
import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';

/**
 * What a build tells its caller: the counts of its summary, the rows it skipped and the documents
 * that failed. Every stage reports through one `ReportTally`, which keeps the lists bounded.
 */

/**
 * How many skipped rows, failures and value issues the report object keeps in full; the rest are
 * only counted, so a site of millions of bad rows does not grow the build's memory. Every one of
 * them is still named as it happens, through the reporter (`warn`, and `issue` for values).
 */
export const REPORT_KEEPS = 100;

export interface Skipped {
  kind: 'user' | 'video';
  key: string;
  reason: string;
  /** The reason is about the name (it cannot be a path), not the row's other data. */
  isName: boolean;
  /** When a value of the wrong type decided it: the table, row, column and what was found. */
  issue?: ValueIssue;
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
  /**
   * The first REPORT_KEEPS values of the wrong type or out of their domain (src/db/decode.ts),
   * each once; `issueCount` counts them all. Each also names its outcome (field or row left out).
   */
  issues: ValueIssue[];
  issueCount: number;
  /** Full builds: groups of names that one case-insensitive or normalising file system would merge (reported, all written). */
  nameCollisions: number;
  documents: number;
  bytesWritten: number;
  seconds: number;
  mode: BuildMode;
  /** Why the build was full, incremental or partial. */
  reason: string;
  /** Incremental builds: how many changes were applied and how many owners they affected. */
  changes?: number;
  owners?: {
    users: number | 'all';
    videos: number | 'all';
    siteFiles: boolean;
    /** The site files were left for a later build although `lastmod`s moved (watch's `deferLastmods`). */
    lastmodsDeferred?: boolean;
    unknownTables: readonly string[];
  };
  /** The change log as the build's snapshot read it: what the tree is as of (absent without a change log). */
  snapshot?: ChangeLogPosition;
}

export interface BuildReporter {
  /** Called now and then with the number of documents done. */
  progress?(done: number): void;
  /** A row that was skipped or a document that failed, as it happens. */
  warn?(message: string): void;
  /** Once, when another build holds the lock and this one waits for it (`what` says who holds it). */
  waiting?(what: string): void;
  /** Once, when the build knows its mode; `expected` estimates the documents it will render, when it can. */
  started?(plan: { mode: BuildMode; reason: string; expected?: number }): void;
  /** Each skipped row, whole (a report keeps only the first REPORT_KEEPS). */
  skipped?(skipped: Skipped): void;
  /** Each document that failed to render, whole. */
  failed?(failure: Failure): void;
  /** A file whose bytes changed was written, at `path` under the output directory. */
  wrote?(path: string, format: string): void;
  /** A file an earlier build wrote was removed. */
  removed?(path: string): void;
  /** A value of the wrong type or out of its domain, as it is found (also passed to `warn` as a line). */
  issue?(issue: ValueIssue): void;
}

/** An unpublishable row under --strict. Exit code 1. */
export class StrictModeError extends VidfeedsError {
  constructor(readonly skipped: Skipped) {
    super(EXIT.failed, { where: `${skipped.kind} ${showName(skipped.key)}`, what: `cannot be published: ${describeSkip(skipped)}`, hint: '--strict makes this fatal' });
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
    issues: [],
    issueCount: 0,
    nameCollisions: 0,
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
    this.reporter?.skipped?.(skipped);
    this.reporter?.warn?.(`skipped ${skipped.kind} ${showName(skipped.key)}: ${describeSkip(skipped)}`);
  }

  /** A document that could not be rendered; `where` names it in the warning (`rss of "alice" (alice/rss/index.rss)`). */
  fail(failure: Failure, where: string): void {
    if (++this.report.failedCount <= REPORT_KEEPS) this.report.failed.push(failure);
    this.reporter?.failed?.(failure);
    this.reporter?.warn?.(`failed: ${where}: ${failure.message}`);
  }

  /** A value of the wrong type or out of its domain, as the reader finds it. */
  issue(issue: ValueIssue): void {
    if (++this.report.issueCount <= REPORT_KEEPS) this.report.issues.push(issue);
    this.reporter?.issue?.(issue);
    this.reporter?.warn?.(`bad value: ${describeIssue(issue)}`);
  }

  /**
   * A document rendered and either written (at `path`) or found unchanged; `bytes` counts what was
   * written for it, its compressed forms included (an unchanged document's forms may be).
   */
  document(path: string, format: string, written: boolean, bytes: number): void {
    const { report } = this;
    if (written) {
      this.reporter?.wrote?.(path, format);
      report.written++;
    } else {
      report.unchanged++;
    }
    report.bytesWritten += bytes;
    report.documents++;
    if (this.reporter?.progress && report.documents - this.lastProgress >= PROGRESS_EVERY) {
      this.lastProgress = report.documents;
      this.reporter.progress(report.documents);
    }
  }

  /** A file an earlier build wrote was removed. */
  removed(path: string): void {
    this.report.removed++;
    this.reporter?.removed?.(path);
  }

  /** A stale file not removed: a symbolic link stands on its path (never removed through). */
  notRemoved(path: string, why: string): void {
    this.reporter?.warn?.(`not removed: ${path}: ${why}`);
  }

  /** A group of names that would be one directory on macOS or Windows. */
  nameCollision(description: string): void {
    this.report.nameCollisions++;
    this.reporter?.warn?.(`name collision: ${description}`);
  }
}
