import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { compressedFormOf, type Encoding } from '../../paths/compression.js';
import type { SitePaths } from '../../paths/site-paths.js';
import { keyedFolder } from '../../paths/url-scheme.js';
import type { BuildState } from '../build-state.js';
import { ownsKey, ownsSiteFiles, type ShardSpec } from '../../shard/shard.js';
import type { OutputWriter } from '../write/output-writer.js';

/**
 * The sweep of a recovery build: after a build was killed (files are renamed into place before
 * their records are committed), or when the state was set aside or made for another output
 * directory, the records do not name every file vidfeeds placed. A full build that follows has
 * recorded every document the database publishes and pruned the rest; the sweep then removes
 * every file in a user's or video's format folder, and every site-wide file's name, that no record
 * names, so nothing a killed build wrote outlives the rows that produced it (a user suspended
 * since, say), and the folders there left empty go with them. Files elsewhere in the directory are
 * the operator's and are left alone; nothing is followed through a symbolic link.
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
  const sweep = (path: string): boolean => {
    if (isRecorded(input, path) || !input.writer.remove(path)) return false;
    removed(path);
    count++;
    return true;
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
    let foldersRemoved = false;
    for (const dir of entries(join(root, entry))) {
      if (!paths.isFormatDir(dir)) continue;
      const { files, folders, emptyFolders } = treeUnder(root, keyedFolder({ dir }, entry));
      let filesRemoved = false;
      for (const file of files) filesRemoved = sweep(file) || filesRemoved;
      // A folder a killed build made for a document it never renamed into place is empty, and a
      // server would answer 403 there instead of 404. Only where one may be empty now (most
      // folders are neither): deepest first, the format's folder last.
      if (!filesRemoved && emptyFolders === 0) continue;
      for (const folder of folders.reverse()) foldersRemoved = (input.writer.removeFolder?.(folder) ?? false) || foldersRemoved;
    }
    // The key's own folder, when that left nothing in it.
    if (foldersRemoved) input.writer.removeFolder?.(entry);
  }
  return count;
}

function isRecorded({ state, formsOnDisk }: SweepInput, path: string): boolean {
  if (state.recorded(path)) return true;
  const form = compressedFormOf(path);
  return form !== null && formsOnDisk.includes(form.encoding) && state.recorded(form.document);
}

/**
 * The files and the folders under a folder, itself first (relative paths, parents before
 * children), and how many folders held nothing; never through a symbolic link.
 */
function treeUnder(root: string, dir: string, found = { files: [] as string[], folders: [] as string[], emptyFolders: 0 }): typeof found {
  const stat = lstatSync(join(root, dir), { throwIfNoEntry: false });
  if (stat === undefined || !stat.isDirectory()) return found;
  found.folders.push(dir);
  const names = entries(join(root, dir));
  if (names.length === 0) found.emptyFolders++;
  for (const name of names) {
    const path = `${dir}/${name}`;
    const entry = lstatSync(join(root, path), { throwIfNoEntry: false });
    if (entry?.isDirectory()) treeUnder(root, path, found);
    else if (entry?.isFile()) found.files.push(path);
  }
  return found;
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}
