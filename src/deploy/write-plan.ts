import { DOCUMENT_RANKS, SITE_RANKS, type PlannedDocument, type PlannedObject } from './deploy-plan.js';
import type { TargetRecord } from './deploy-record.js';

/**
 * What a deploy decided to do, read step by step while it writes: the documents with objects to
 * write in the safe order of src/deploy/deploy-plan.ts, then the keys to delete. A full compare
 * keeps it in a temporary database (src/deploy/plan-spill.ts), so the deploy holds a few pages of
 * it at a time whatever the size of the site; an incremental deploy, which holds only what
 * changed, keeps it in memory.
 */

export type StepKind = 'new' | 'changed' | 'site';

/** An object to write, and whether only its headers differ from the store's (its readers' bytes do not). */
export interface PendingObject extends PlannedObject {
  headersOnly: boolean;
}

/** A document with the objects it has to write, its compressed forms first. */
export interface PendingDocument {
  file: string;
  writes: PendingObject[];
}

/** Gives the next item each call, undefined once there is none. */
export type Source<T> = () => T | undefined;

export interface WritePlan {
  documents: number;
  objects: number;
  unchanged: number;
  /** Objects whose headers and metadata were asked of the store. */
  checked: number;
  /** The target's record as the deploy began, and the fingerprint of the headers it publishes now. */
  known: TargetRecord | undefined;
  fingerprint: string;
  /** The documents whose bytes for readers are about to change, in the steps' order, read as they are iterated. */
  changedForReaders(): Iterable<string>;
  /** The steps in the safe order, each giving its documents with something to write. */
  steps(): Array<{ kind: StepKind; documents: Source<PendingDocument> }>;
  /** The keys to delete, in key order, in batches of at most `size`. */
  deletions(size: number): Source<string[]>;
  /** Whether this deploy publishes the document (a key of it deleted is then only a form no longer configured). */
  isPlanned(file: string): boolean;
  close(): void;
}

/** The site files' ranks in the order their steps are taken. */
export const SITE_STEP_RANKS: readonly number[] = [SITE_RANKS.plain, SITE_RANKS.parts, SITE_RANKS.index, SITE_RANKS.last];

/** The documents' ranks in the order their steps are taken, within the new ones and within the changed ones. */
export const DOCUMENT_STEP_RANKS: readonly number[] = [DOCUMENT_RANKS.video, DOCUMENT_RANKS.user];

export function fromArray<T>(items: readonly T[]): Source<T> {
  let next = 0;
  return () => items[next++];
}

/**
 * An incremental deploy's plan, in memory: every object of the changed documents to write (those
 * first recorded after the last deploy are new), and the given keys to delete.
 */
export function incrementalPlan(
  documents: readonly PlannedDocument[],
  newFiles: ReadonlySet<string>,
  deletions: readonly string[],
  record: { known: TargetRecord | undefined; fingerprint: string },
): WritePlan {
  const planned = new Set(documents.map((d) => d.file));
  const pending = (rank: number, isNew?: boolean) =>
    fromArray(
      documents
        .filter((d) => d.rank === rank && (isNew === undefined || newFiles.has(d.file) === isNew))
        .map((d) => ({ file: d.file, writes: d.objects.map((o) => ({ ...o, headersOnly: false })) })),
    );
  return {
    documents: documents.length,
    objects: documents.reduce((n, d) => n + d.objects.length, 0),
    unchanged: 0,
    checked: 0,
    ...record,
    changedForReaders: () => {
      const inStep = (rank: number, isNew?: boolean) => documents.filter((d) => d.rank === rank && (isNew === undefined || newFiles.has(d.file) === isNew));
      return [
        ...DOCUMENT_STEP_RANKS.flatMap((rank) => inStep(rank, true)),
        ...DOCUMENT_STEP_RANKS.flatMap((rank) => inStep(rank, false)),
        ...SITE_STEP_RANKS.flatMap((rank) => inStep(rank)),
      ].map((d) => d.file);
    },
    steps: () => [
      ...DOCUMENT_STEP_RANKS.map((rank) => ({ kind: 'new' as const, documents: pending(rank, true) })),
      ...DOCUMENT_STEP_RANKS.map((rank) => ({ kind: 'changed' as const, documents: pending(rank, false) })),
      ...SITE_STEP_RANKS.map((rank) => ({ kind: 'site' as const, documents: pending(rank) })),
    ],
    deletions: (size) => {
      let next = 0;
      return () => {
        if (next >= deletions.length) return undefined;
        next += size;
        return deletions.slice(next - size, next);
      };
    },
    isPlanned: (file) => planned.has(file),
    close: () => undefined,
  };
}
