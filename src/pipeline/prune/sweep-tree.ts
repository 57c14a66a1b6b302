import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { compressedFormOf, type Encoding } from '../../paths/compression.js';
import type { SitePaths } from '../../paths/site-paths.js';
import type { BuildState } from '../build-state.js';
import { ownsKey, ownsSiteFiles, type ShardSpec } from '../plan/shard.js';
import type { OutputWriter } from '../write/output-writer.js';

/**
 * The sweep of a recovery build: after a build was killed (files are renamed into place before
 * their records are committed), or when the state was set aside or made for another output
 * directory, the records do not name every file vidfeeds placed. A full build that follows has
 * recorded every document the database publishes and pruned the rest; the sweep then removes
 * every file in a user's or video's format folder, and every site-wide file's name, that no record
 * names, so nothing a killed build wrote outlives the rows that produced it (a user suspended
 * since, say). Files elsewhere in the directory are the operator's and are left alone; nothing is
 * followed through a symbolic link.
 */

export interface SweepInput {
  root: string;
  writer: OutputWriter;
  state: BuildState;
  paths: SitePaths;
  /** The compressed forms a recorded document may have beside it. */
  formsOnDisk: readonly Encoding[];
  shard?: ShardSpec;
}

/** Removes the unrecorded files where vidfeeds writes; `removed` hears of each. */
export function sweepTree(input: SweepInput, removed: (path: string) => void): number {
  const { root, paths, shard } = input;
  let count = 0;
  const sweep = (path: string) => {
    if (isRecorded(input, path)) return;
    if (input.writer.remove(path)) {
      removed(path);
      count++;
    }
  };
  for (const entry of entries(root)) {
    if (entry.startsWith('.')) continue;
    const stat = lstatSync(join(root, entry), { throwIfNoEntry: false });
    if (stat === undefined || stat.isSymbolicLink()) continue;
    if (!stat.isDirectory()) {
      if (stat.isFile() && paths.isReserved(entry) && ownsSiteFiles(shard)) sweep(entry);
      continue;
    }
    if (!ownsKey(shard, entry)) continue;
    for (const dir of entries(join(root, entry))) {
      if (!paths.isFormatDir(dir)) continue;
      for (const file of filesUnder(root, `${entry}/${dir}`)) sweep(file);
    }
  }
  return count;
}

function isRecorded({ state, formsOnDisk }: SweepInput, path: string): boolean {
  if (state.recorded(path)) return true;
  const form = compressedFormOf(path);
  return form !== null && formsOnDisk.includes(form.encoding) && state.recorded(form.document);
}

/** The files under a folder (relative paths), never through a symbolic link. */
function filesUnder(root: string, dir: string): string[] {
  const stat = lstatSync(join(root, dir), { throwIfNoEntry: false });
  if (stat === undefined || !stat.isDirectory()) return [];
  const files: string[] = [];
  for (const name of entries(join(root, dir))) {
    const path = `${dir}/${name}`;
    const entry = lstatSync(join(root, path), { throwIfNoEntry: false });
    if (entry?.isDirectory()) files.push(...filesUnder(root, path));
    else if (entry?.isFile()) files.push(path);
  }
  return files;
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}
