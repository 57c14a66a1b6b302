import type { BuildReport, Failure } from '../pipeline/build-report.js';
import type { SitePaths } from '../paths/site-paths.js';

/**
 * The one JSON object `--json` prints on stdout for `build`, `check`, `shards check` and `sync`. Its
 * JSON Schema is docs/schemas/report.schema.json (described in docs/report.md); `report` is the
 * version of that layout, raised when a field changes meaning or goes away.
 */
export const REPORT_VERSION = 1;

/** The fields every command's `--json` object begins with (docs/schemas/report.schema.json). */
export function reportHead(command: string, exitCode: number): { report: number; command: string; ok: boolean; exitCode: number } {
  return { report: REPORT_VERSION, command, ok: exitCode === 0, exitCode };
}

/** A skipped row as the JSON report lists it: the reporter's `Skipped` with its reason in words. */
export interface SkippedRow {
  kind: 'user' | 'video';
  key: string;
  reason: string;
  [detail: string]: unknown;
}

/** Collects a build's events (src/cli/commands/build.ts) into its JSON report. */
export class BuildJson {
  readonly skipped: SkippedRow[] = [];
  readonly failed: Failure[] = [];
  private readonly written: string[] = [];
  private readonly removedUrls: string[] = [];

  constructor(
    private readonly paths: SitePaths,
    private readonly out: string,
    private readonly dryRun = false,
  ) {}

  wrote(files: readonly string[]): void {
    for (const file of files) this.written.push(this.paths.urlOfFile(file));
  }

  removed(files: readonly string[]): void {
    for (const file of files) this.removedUrls.push(this.paths.urlOfFile(file));
  }

  /** The report of a build that finished (`report`) or stopped with an error (interrupted, locked, bad input). */
  text(end: { report: BuildReport; exitCode: number; usersPublished?: number } | { error: unknown; exitCode: number }): string {
    const report = 'report' in end ? end.report : undefined;
    const value = {
      ...reportHead('build', end.exitCode),
      ...('error' in end ? { error: (end.error as Error).message ?? String(end.error) } : {}),
      out: this.out,
      ...(this.dryRun ? { dryRun: true } : {}),
      ...(report === undefined
        ? {}
        : {
            mode: report.mode,
            reason: report.reason,
            seconds: report.seconds,
            counts: {
              documents: report.documents,
              written: report.written,
              unchanged: report.unchanged,
              removed: report.removed,
              skipped: report.skippedCount,
              failed: report.failedCount,
              bytesWritten: report.bytesWritten,
            },
            ...(report.changes === undefined ? {} : { changes: report.changes }),
            ...(report.owners === undefined ? {} : { owners: report.owners }),
            ...(report.snapshot === undefined ? {} : { snapshot: { databaseId: report.snapshot.databaseId, position: report.snapshot.position } }),
            ...('usersPublished' in end && end.usersPublished !== undefined ? { usersPublished: end.usersPublished } : {}),
          }),
      skipped: this.skipped,
      failed: this.failed.map((f) => ({ ...f, url: this.paths.urlOfFile(f.path) })),
      // What a CDN should purge: every URL whose bytes changed, and every URL that is gone. An
      // interrupted build lists what it did before it stopped.
      urls: { written: this.written, removed: this.removedUrls },
    };
    return JSON.stringify(value);
  }
}
