import type { ChangeLogPosition } from '../../db/change-log.js';
import type { BuildReport } from '../build-report.js';
import type { BuildState } from '../build-state.js';
import { basisOf, type BuildFingerprint } from '../plan/incremental.js';
import type { OutputWriter } from '../write/output-writer.js';

/**
 * The record stage: once every file is on disk (a writer may write in the background), the state
 * says what the next build may follow from, and commits. A complete build without failures moves
 * the basis to its snapshot; a partial build, or an incremental one with failures (its changes
 * are applied again next time), keeps the old one; a full build with failures leaves none, so the
 * next is full too.
 */
export function commitState(
  { writer, state }: { writer: OutputWriter; state: BuildState },
  report: BuildReport,
  fingerprint: BuildFingerprint | undefined,
  log: ChangeLogPosition | undefined,
): void {
  writer.flush?.();
  state.finish(nextBasis(report, fingerprint, log));
  state.commit();
}

function nextBasis(report: BuildReport, fingerprint: BuildFingerprint | undefined, log: ChangeLogPosition | undefined): Parameters<BuildState['finish']>[0] {
  if (report.mode === 'partial') return 'keep';
  if (report.failedCount > 0) {
    return report.mode === 'incremental' ? 'keep' : { dropped: `the last full build had ${report.failedCount} failed documents` };
  }
  if (fingerprint === undefined || log === undefined) return { dropped: 'the last build had no change log to follow' };
  // The position read inside the build's snapshot: changes committed after it are the next build's.
  return basisOf(fingerprint, log);
}
