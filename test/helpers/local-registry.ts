import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/**
 * An npm registry on loopback that serves exactly the run-time dependencies package-lock.json
 * names, with their tarballs read from npm's own cache (where `npm ci` put them, by integrity).
 * Installing the packed vidfeeds against it shows that the tarball installs on a machine without
 * the clone, with no network beyond what `npm ci` fetched: npm resolves every dependency by its
 * full metadata, which `npm ci` never caches, so a plain `--offline` install cannot.
 */

interface LockEntry {
  name?: string;
  version: string;
  integrity?: string;
  dev?: boolean;
  [field: string]: unknown;
}

const MANIFEST_FIELDS = ['dependencies', 'optionalDependencies', 'peerDependencies', 'peerDependenciesMeta', 'bin', 'engines', 'os', 'cpu', 'hasInstallScript'];

export interface LocalRegistry {
  url: string;
  /** Tarballs the lock names that the cache does not hold (the registry cannot serve them). */
  missing: string[];
  /** Every path of `files` that was asked for, in order. */
  served: string[];
  close(): Promise<void>;
}

/** The file npm's cache keeps a tarball of this integrity in (cacache's content-v2 layout). */
function cachedTarball(cacheDir: string, integrity: string): string {
  const [algorithm, digest] = integrity.split(' ')[0]!.split('-') as [string, string];
  const hex = Buffer.from(digest, 'base64').toString('hex');
  return join(cacheDir, '_cacache', 'content-v2', algorithm, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
}

/**
 * `files` are served as they are, by URL path: a mirror of prebuilt binaries, say, which a
 * package's install script fetches from a host named in the environment.
 */
export async function startLocalRegistry(root: string, files: ReadonlyMap<string, string> = new Map()): Promise<LocalRegistry> {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const cacheDir = execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
  const versions = new Map<string, Map<string, Record<string, unknown>>>();
  const tarballs = new Map<string, string>();
  const missing: string[] = [];
  const served: string[] = [];
  const server: Server = createServer((request, response) => {
    const path = decodeURIComponent((request.url ?? '/').split('?')[0]!);
    if (files.has(path)) served.push(path);
    const file = tarballs.get(path) ?? files.get(path);
    if (file !== undefined) {
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      createReadStream(file).pipe(response);
      return;
    }
    const known = versions.get(path.slice(1));
    if (known === undefined) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    const latest = [...known.keys()].at(-1)!;
    const packument = { name: path.slice(1), 'dist-tags': { latest }, versions: Object.fromEntries(known) };
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(packument));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  for (const [location, entry] of Object.entries(lock.packages)) {
    if (location === '' || entry.dev === true || entry.integrity === undefined) continue;
    const name = entry.name ?? location.slice(location.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const tarballPath = `/${name}/-/${name.split('/').pop()}-${entry.version}.tgz`;
    const file = cachedTarball(cacheDir, entry.integrity);
    if (!existsSync(file)) missing.push(`${name}@${entry.version}`);
    else tarballs.set(tarballPath, file);
    // The scripts (an install script that compiles) come from the package itself, as installed.
    const installed = join(root, location, 'package.json');
    const scripts = existsSync(installed) ? (JSON.parse(readFileSync(installed, 'utf8')) as { scripts?: unknown }).scripts : undefined;
    const manifest: Record<string, unknown> = { name, version: entry.version, scripts, dist: { tarball: `${url}${tarballPath}`, integrity: entry.integrity } };
    for (const field of MANIFEST_FIELDS) if (entry[field] !== undefined) manifest[field] = entry[field];
    if (!versions.has(name)) versions.set(name, new Map());
    versions.get(name)!.set(entry.version, manifest);
  }
  return { url, missing, served, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
