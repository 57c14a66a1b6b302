import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { compressedFormOf } from '../../paths/compression.js';
import type { SitePaths } from '../../paths/site-paths.js';
import { keyedFolder } from '../../paths/url-scheme.js';
import type { BuildState } from '../build-state.js';
import { ownsKey, ownsSiteFiles, type ShardSpec } from '../../shard/shard.js';

/**
 * Files where vidfeeds writes that no build recorded: in a user's or video's format folder, or
 * under a site-wide file's name at the top (as `vidfeeds check` finds them). A full build
 * (`build --full`) removes them, so that the tree is what the database renders. Files anywhere
 * else are the operator's and are never touched; dot-named entries (the staging folder, build
 * records) are not documents.
 */
export function* strayFiles(out: string, state: BuildState, paths: SitePaths, shard: ShardSpec | undefined): Generator<string> {
  const recorded = (path: string) => {
    if (state.previous(path) !== undefined) return true;
    const form = compressedFormOf(path);
    return form !== null && state.previous(form.document) !== undefined;
  };
  for (const entry of entries(out)) {
    if (entry.name.startsWith('.')) continue;
    if (!entry.isDirectory()) {
      if (ownsSiteFiles(shard) && paths.isReserved(entry.name) && !recorded(entry.name)) yield entry.name;
      continue;
    }
    if (!ownsKey(shard, entry.name)) continue;
    for (const sub of entries(join(out, entry.name))) {
      if (sub.isDirectory() && paths.isFormatDir(sub.name)) yield* unrecorded(out, keyedFolder({ dir: sub.name }, entry.name), recorded);
    }
  }
}

function* unrecorded(out: string, dir: string, recorded: (path: string) => boolean): Generator<string> {
  for (const entry of entries(join(out, dir))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) yield* unrecorded(out, path, recorded);
    else if (!recorded(path)) yield path;
  }
}

function entries(dir: string) {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}
