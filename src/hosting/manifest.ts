import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { matchRoute, type RouteMatch, type Routes } from './routes.js';

/**
 * The manifest of a built tree for object stores and CDNs that set a Content-Type per object at
 * upload (S3, GCS, R2, Azure Blob): every file the table serves, its content type and the keys it
 * answers under. Files the table does not name (dot files, stray files) are left out and counted.
 */

export interface ManifestEntry {
  /** File under the tree, `/`-separated. */
  file: string;
  contentType: string;
  /** Object keys below the base path that must answer with this file (decoded, no leading `/`). */
  keys: string[];
}

export interface Manifest {
  generator: string;
  /** Path of the base URL ('' at the root): the bucket prefix the keys go under. */
  basePath: string;
  files: ManifestEntry[];
}

/** Files of the tree, depth first in name order; dot-named files and folders are never listed. */
function* walk(root: string, relative = ''): Generator<string> {
  const entries = readdirSync(join(root, relative), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const path = relative === '' ? entry.name : `${relative}/${entry.name}`;
    if (entry.isDirectory()) yield* walk(root, path);
    else if (entry.isFile()) yield path;
  }
}

/** Which format a file under the tree belongs to, or null when the table serves no URL from it. */
export function routeOfFile(routes: Routes, file: string): RouteMatch | null {
  const parts = file.split('/');
  if (parts.length === 1) return matchRoute(routes, parts);
  if (parts.length !== 3) return null;
  const [key, dir, name] = parts as [string, string, string];
  const format = routes.keyed.find((f) => f.dir === dir && f.file === name);
  if (format === undefined) return null;
  return matchRoute(routes, [key, dir, format.urlName]);
}

/** The keys (below the base path) a file answers under: a directory URL also without its slash. */
export function keysOf(match: RouteMatch): string[] {
  if (match.kind === 'site') return [match.file];
  const dirKey = `${match.key}/${match.format.dir}`;
  return match.format.urlName === '' ? [`${dirKey}/`, dirKey] : [`${dirKey}/${match.format.urlName}`];
}

export function buildManifest(routes: Routes, root: string, basePath: string, generator: string): { manifest: Manifest; ignored: string[] } {
  const files: ManifestEntry[] = [];
  const ignored: string[] = [];
  for (const file of walk(root)) {
    const match = routeOfFile(routes, file);
    if (match === null) {
      ignored.push(file);
      continue;
    }
    files.push({ file, contentType: match.format.mediaType, keys: keysOf(match) });
  }
  return { manifest: { generator, basePath, files }, ignored };
}
