import type { BuildState } from './build-state.js';
import type { OutputWriter } from './output-writer.js';

/**
 * The prune stage: removes the files an earlier build wrote that this one does not produce, and
 * their records. It takes the stale paths as the state yields them, a page at a time, so no list
 * of them is held: a build after the site shrank may have millions. Never removes a path the state
 * does not name: nothing else in the output directory is touched.
 */
export function pruneStale(paths: Iterable<string>, writer: OutputWriter, state: BuildState): { removed: number; forgotten: number } {
  let removed = 0;
  let forgotten = 0;
  for (const path of paths) {
    if (writer.remove(path)) removed++;
    state.forget(path);
    forgotten++;
  }
  return { removed, forgotten };
}
