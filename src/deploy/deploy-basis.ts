import { createHash } from 'node:crypto';
import { readStateChanges, type StateChanges } from '../pipeline/state-changes.js';
import type { PublishedState, TargetRecord } from './deploy-record.js';

/**
 * Whether a deploy may send only what the builds since the last deploy changed (an incremental
 * deploy), or must compare the whole tree with the store's listing (a full compare), and why.
 *
 * The target's deploy record says which build state it last published: its lineage (`stateId`),
 * the number of the last build in it, the tree, and a fingerprint of everything else that decides
 * an object's bytes and headers (vidfeeds's version, the base URL, Cache-Control, hubs, the
 * compressed forms, the IndexNow key, the target). The deploy is incremental only when all of it
 * holds: the same state, no build interrupted since, the same tree and the same fingerprint, and
 * no `--verify`. Otherwise the record cannot be trusted to say what the store holds, and the full
 * compare says why.
 */

export type DeployBasis =
  | { mode: 'incremental'; state: StateChanges; since: number; published: PublishedState }
  | { mode: 'full'; reason: string; state: StateChanges | null; published: PublishedState | null };

export interface BasisRequest {
  stateFile: string;
  out: string;
  /** The fingerprint of the configuration the objects' bytes and headers follow from. */
  config: string;
  verify: boolean;
  known: TargetRecord | undefined;
  /** The most documents an incremental deploy holds (changed and removed); more are compared in bounded memory. */
  incrementalMost?: number;
}

/**
 * An incremental deploy holds the documents it sends in memory (about 1 KB each); a change of
 * more (a template of every page edited, a large import) goes through the full compare, which
 * holds a page of them whatever their number.
 */
export const INCREMENTAL_MOST = 20_000;

export function chooseBasis(request: BasisRequest): DeployBasis {
  const opened = readStateChanges(request.stateFile);
  if ('problem' in opened) return { mode: 'full', reason: opened.problem, state: null, published: null };
  const state = opened;
  const published: PublishedState | null = state.interrupted
    ? null
    : { stateId: state.stateId, build: state.lastBuild, out: request.out, config: request.config, compression: state.compression };
  const full = (reason: string): DeployBasis => ({ mode: 'full', reason, state, published });
  if (request.verify) return full('--verify compares everything');
  const last = request.known?.published;
  if (last === undefined) return full('no deploy of this build state to this target is recorded');
  if (state.interrupted) return full('a build of the tree was interrupted: its files and its state may disagree');
  if (last.out !== request.out) return full(`the last deploy to this target published another tree (${last.out})`);
  if (last.stateId !== state.stateId) return full('the build state is not the one the last deploy published (set aside, replaced or made anew)');
  if (last.build > state.lastBuild) return full(`the last deploy published build ${last.build}, which this build state does not know`);
  // Which forms are beside a changed document, and which of its forms the store may hold, only a full compare can tell.
  if (state.compression === null) return full('the compressed forms beside the documents are not known: no full build has finished without failures since `compress` changed (or ever)');
  if (last.config !== request.config || last.compression !== state.compression) return full('the configuration, the headers or the compressed forms changed since the last deploy');
  const most = request.incrementalMost ?? INCREMENTAL_MOST;
  if (state.countAfter(last.build, most + 1) > most) return full(`the builds after build ${last.build} changed or removed more than ${most} documents: compared a page at a time, not held`);
  return { mode: 'incremental', state, since: last.build, published: published! };
}

/** The fingerprint of what decides objects' bytes and headers beside the tree itself. */
export function configFingerprint(parts: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}
