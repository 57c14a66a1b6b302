import { ALL_ENCODINGS, compress, compressedPath, type Encoding, isCompressible } from '../../paths/compression.js';
import type { BuildState } from '../build-state.js';
import { documentHash } from '../../render/document-hash.js';
import { documentBytes } from './document-bytes.js';
import type { OutputWriter } from './output-writer.js';
import type { FailedDocument, RenderedDocument } from '../render/render-documents.js';

/**
 * The compare-and-write stage: a rendered document is written only when its bytes differ from
 * what the last build recorded for its path (or, without a trustworthy record, from what is on
 * disk), so unchanged files keep their times and ETags; either way the state records its hash.
 * A document that failed to render keeps its old file and record.
 *
 * The pre-compressed forms of a text document (the configuration's `compress`) are written before
 * the document, so a build killed in between leaves a document that differs from its record and
 * is rewritten, with its forms, by the next build (docs/hosting.md).
 */

export interface WriteTarget {
  writer: OutputWriter;
  state: BuildState;
  /** Compare with the bytes on disk rather than the saved hashes (after an interrupted build). */
  verify: boolean;
  /** The output held nothing when the build began: nothing on disk to compare with. */
  startedEmpty: boolean;
  /** The compressed forms to write beside each text document. */
  compression: readonly Encoding[];
  /**
   * The forms beside unchanged documents may not be the configured ones (the encodings changed
   * since the last full build, or no build recorded them): bring them in line.
   */
  formsUnknown: boolean;
}

export interface WriteOutcome {
  written: boolean;
  /** Bytes written: the document's when it changed, and any compressed forms. */
  bytes: number;
  /**
   * The path had no record, or one of another row: a document the last build did not produce, or
   * a name now held by another row (replaced under a new id). The published names, or the ids a
   * sitemap split by id lists them under, may have changed.
   */
  isNew: boolean;
  /** The row the path's record named before, when another one holds the name now. */
  movedFrom: number | null;
  /**
   * Why the document could not be written (PathGuard: a link or a file where a folder should be,
   * a folder that cannot be written, a directory in its place): a failed document, whose old
   * record is kept so the next build tries again.
   */
  failure?: string;
}

export function compareAndWrite(target: WriteTarget, document: RenderedDocument): WriteOutcome {
  const { writer, state } = target;
  const { path } = document;
  // Reused memory (document-bytes.ts): everything below is done with it before the next document.
  const body = documentBytes(document.text);
  const hash = documentHash(body);
  const previous = state.previous(path);
  // Without a trustworthy saved hash (an interrupted build, no record of this path: a lost or
  // replaced state, or a record carried over without its hash, size -1), the bytes on disk
  // decide, so identical files keep their times and ETags; unless the output held nothing when
  // the build began.
  const same =
    target.verify || previous === undefined || previous.size < 0
      ? !target.startedEmpty && (writer.holds?.(path, body) ?? false)
      : previous.size === body.length && previous.hash.equals(hash) && writer.size(path) === body.length;
  let bytes = 0;
  if (same) {
    // After an interrupted build, too: it may have written forms and been killed before their document.
    if (target.formsUnknown || target.verify) bytes += syncForms(target, document, body);
  } else {
    const problem = writer.blocked?.(path) ?? null;
    if (problem !== null) {
      const isNew = previous === undefined;
      state.keep(path);
      return { written: false, bytes: 0, isNew, movedFrom: null, failure: problem };
    }
    // The forms of encodings no longer wanted go first: left beside the new document, a server
    // would send their old bytes to the clients that accept that encoding.
    if (target.formsUnknown || target.verify) removeUnwantedForms(target, document);
    bytes = writeWithForms((to, data) => writer.write(to, data), document, body, target.compression);
  }
  return recordDocument(state, document, hash, body.length, { written: !same, bytes }, previous);
}

/**
 * Writes a document and, for a text document, its compressed forms before it (see above) through
 * `write`; returns the bytes written.
 */
export function writeWithForms(
  write: (path: string, body: Buffer) => void,
  { format, path }: Pick<RenderedDocument, 'format' | 'path'>,
  body: Buffer,
  compression: readonly Encoding[],
): number {
  let bytes = 0;
  if (isCompressible(format.mediaType)) {
    for (const encoding of compression) {
      const form = compress(body, encoding);
      write(compressedPath(path, encoding), form);
      bytes += form.length;
    }
  }
  write(path, body);
  return bytes + body.length;
}

function recordDocument(
  state: BuildState,
  document: Omit<RenderedDocument, 'text'>,
  hash: Buffer,
  size: number,
  done: { written: boolean; bytes: number },
  previous: ReturnType<BuildState['previous']>,
): WriteOutcome {
  state.record(document.path, document.format.name, document.owner, document.user, hash, size);
  const ownerId = document.owner.kind === 'site' ? null : document.owner.id;
  const movedFrom = previous !== undefined && previous.ownerId !== ownerId ? previous.ownerId : null;
  return { ...done, isNew: previous === undefined || movedFrom !== null, movedFrom };
}

/**
 * The compressed forms of a document that did not change: written where they do not hold its
 * bytes, removed for encodings no longer wanted. Returns the bytes written.
 */
function syncForms(target: WriteTarget, document: RenderedDocument, body: Buffer): number {
  const { writer, compression } = target;
  const { format, path } = document;
  removeUnwantedForms(target, document);
  if (!isCompressible(format.mediaType)) return 0;
  let bytes = 0;
  for (const encoding of compression) {
    const formPath = compressedPath(path, encoding);
    const form = compress(body, encoding);
    if (writer.holds?.(formPath, form) ?? false) continue;
    writer.write(formPath, form);
    bytes += form.length;
  }
  return bytes;
}

/** Removes the forms of a document in encodings it is not to have (all of them for a type never compressed). */
function removeUnwantedForms({ writer, startedEmpty, compression }: WriteTarget, { format, path }: Pick<RenderedDocument, 'format' | 'path'>): void {
  if (startedEmpty) return;
  const wanted = isCompressible(format.mediaType) ? compression : [];
  for (const encoding of ALL_ENCODINGS) {
    if (wanted.includes(encoding)) continue;
    const formPath = compressedPath(path, encoding);
    // Asked first: a removal waits for the write thread, a question about an absent file does not.
    if (writer.size(formPath) !== null) writer.remove(formPath);
  }
}

/** Keeps the file and record of a document that failed to render. Returns whether it had none (a new path). */
export function keepFailed(target: Pick<WriteTarget, 'state'>, failed: FailedDocument): boolean {
  const isNew = target.state.previous(failed.path) === undefined;
  target.state.keep(failed.path);
  return isNew;
}
