import { createHash } from 'node:crypto';
import type { BuildState } from './build-state.js';
import type { OutputWriter } from './output-writer.js';
import type { FailedDocument, RenderedDocument } from './render-documents.js';

/**
 * The compare-and-write stage: a rendered document is written only when its bytes differ from
 * what the last build recorded for its path (or, without a trustworthy record, from what is on
 * disk), so unchanged files keep their times and ETags; either way the state records its hash.
 * A document that failed to render keeps its old file and record.
 */

export interface WriteTarget {
  writer: OutputWriter;
  state: BuildState;
  /** Compare with the bytes on disk rather than the saved hashes (after an interrupted build). */
  verify: boolean;
  /** The output held nothing when the build began: nothing on disk to compare with. */
  startedEmpty: boolean;
}

export interface WriteOutcome {
  written: boolean;
  /** The path had no record: a document the last build did not produce (the published names may have changed). */
  isNew: boolean;
}

export function compareAndWrite(target: WriteTarget, document: RenderedDocument): WriteOutcome {
  const { writer, state } = target;
  const { path, body } = document;
  const hash = createHash('sha1').update(body).digest();
  const previous = state.previous(path);
  // Without a trustworthy saved hash (an interrupted build, or no record of this path: a lost or
  // replaced state), the bytes on disk decide, so identical files keep their times and ETags;
  // unless the output held nothing when the build began.
  const same =
    target.verify || previous === undefined
      ? !target.startedEmpty && (writer.holds?.(path, body) ?? false)
      : previous.size === body.length && previous.hash.equals(hash) && writer.size(path) === body.length;
  if (!same) writer.write(path, body);
  state.record(path, document.format.name, document.owner, document.user, hash, body.length);
  return { written: !same, isNew: previous === undefined };
}

/** Keeps the file and record of a document that failed to render. Returns whether it had none (a new path). */
export function keepFailed(target: Pick<WriteTarget, 'state'>, failed: FailedDocument): boolean {
  const isNew = target.state.previous(failed.path) === undefined;
  target.state.keep(failed.path);
  return isNew;
}
