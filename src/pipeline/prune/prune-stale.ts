import { compressedPath, type Encoding } from '../../paths/compression.js';
import type { BuildState } from '../build-state.js';
import type { OutputWriter } from '../write/output-writer.js';

/**
 * The prune stage: removes the files an earlier build wrote that this one does not produce, and
 * their records. It takes the stale paths as the state yields them, a page at a time, so no list
 * of them is held: a build after the site shrank may have millions. Never removes a path the state
 * does not name (and the compressed forms beside them): nothing else in the output directory is
 * touched. Returns how many records it dropped; `removed` hears of each file that was there.
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
