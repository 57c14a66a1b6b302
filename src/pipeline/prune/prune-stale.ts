import { compressedPath, type Encoding } from '../../paths/compression.js';
import type { SitePaths } from '../../paths/site-paths.js';
import type { BuildState } from '../build-state.js';
import type { ShardSpec } from '../../shard/shard.js';
import type { OutputWriter } from '../write/output-writer.js';
import { strayFiles } from './stray-files.js';
import { sweepTree } from './sweep-tree.js';

/**
 * The prune stage: every removal a build makes. The files an earlier build wrote that this one
 * does not produce, with their records; after a killed build (or a state set aside) the sweep of
 * what no record names (sweep-tree.ts); and the repair of `build --full`, which leaves nothing
 * where vidfeeds writes that no build recorded (stray-files.ts). It runs once the documents and
 * the site files are written and the removal guard has let the build through (build-scopes.ts).
 */

export interface PruneTarget {
  writer: OutputWriter;
  state: BuildState;
  /** The compressed forms a pruned document may have beside it. */
  formsOnDisk: readonly Encoding[];
  paths: SitePaths;
  shard?: ShardSpec;
}

export interface PruneWork {
  /** The stale paths, each read when the prune comes to it. */
  stale: ReadonlyArray<() => Iterable<string>>;
  /** The sweep of a recovery build, with the forms a recorded document may have beside it. */
  sweep?: { formsOnDisk: readonly Encoding[] };
  /** The stray-file repair of a whole `build --full`. */
  strays: boolean;
}

/** What the prune stage tells: a file removed, a stale file not removed and why. */
export interface PruneHeard {
  removed(path: string): void;
  notRemoved(path: string, why: string): void;
}

/** Removes what `work` names from a tree with a root; returns how many stale records it dropped. */
export function prune(work: PruneWork, target: PruneTarget, heard: PruneHeard): number {
  let pruned = 0;
  for (const paths of work.stale) pruned += pruneStale(paths(), target, (path) => heard.removed(path), (path, why) => heard.notRemoved(path, why));
  const { writer, state, paths, shard } = target;
  if (writer.root === undefined || (work.sweep === undefined && !work.strays)) return pruned;
  // The tree is read as it is once the writer has placed every file it was handed.
  writer.flush?.();
  if (work.sweep !== undefined) {
    sweepTree({ root: writer.root, writer, state, paths, formsOnDisk: work.sweep.formsOnDisk, shard }, (path) => heard.removed(path));
    state.swept();
  }
  if (work.strays) {
    for (const path of strayFiles(writer.root, state, paths, shard)) if (writer.remove(path)) heard.removed(path);
  }
  return pruned;
}

/**
 * The stale paths removed, with their records. It takes them as the state yields them, a page at
 * a time, so no list of them is held: a build after the site shrank may have millions. Never
 * removes a path the state does not name (and the compressed forms beside them): nothing else in
 * the output directory is touched. Returns how many records it dropped; `removed` hears of each
 * file that was there.
 */
export function pruneStale(
  paths: Iterable<string>,
  { writer, state, formsOnDisk }: { writer: OutputWriter; state: BuildState; formsOnDisk: readonly Encoding[] },
  removed: (path: string) => void,
  refused: (path: string, why: string) => void = () => {},
): number {
  let forgotten = 0;
  for (const path of paths) {
    // A link where the file's folders should be: what it points to is not vidfeeds's to remove.
    const blocked = writer.blocked?.(path) ?? null;
    if (blocked !== null && / symbolic link /.test(blocked)) refused(path, blocked);
    for (const encoding of formsOnDisk) writer.remove(compressedPath(path, encoding));
    if (writer.remove(path)) removed(path);
    state.forget(path);
    forgotten++;
  }
  return forgotten;
}
