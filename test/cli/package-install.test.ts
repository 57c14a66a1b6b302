import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalRegistry, type LocalRegistry } from '../helpers/local-registry.js';
import { serving } from '../helpers/serve-process.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The package as an operator installs it: `npm pack` of a copy of the clone (its `prepack`
 * compiles from clean), `npm install -g` of the tarball into an empty prefix against a loopback
 * registry serving the locked dependencies from npm's cache (no network), then the installed
 * `vidfeeds` run from a folder that is neither the clone nor the prefix.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const SOURCES = ['bin', 'src', 'templates', 'schemas', 'docs', 'package.json', 'package-lock.json', 'tsconfig.json', 'README.md'];

let work: string;
let tarball: string;
let prefix: string;
let registry: LocalRegistry;
let installed: { status: number | null; stdout: string; stderr: string };

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env } });
}

function runAsync(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
}

/**
 * A PATH that holds the prefix, the Node running this suite (the one the install compiled
 * better-sqlite3 for, which need not be the system's) and the system, and nothing of the clone.
 */
function installedPath(): string {
  return [join(prefix, 'bin'), dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':');
}

/** The installed binary, run as an operator's shell would run it. */
function vidfeeds(args: string[], cwd: string): SpawnSyncReturns<string> {
  return spawnSync(join(prefix, 'bin', 'vidfeeds'), args, { cwd, encoding: 'utf8', env: { PATH: installedPath(), HOME: work, LANG: 'C.UTF-8' } });
}

beforeAll(async () => {
  ({ dir: work } = tempDir('vidfeeds-package-'));
  const copy = join(work, 'clone');
  for (const entry of SOURCES) cpSync(join(ROOT, entry), join(copy, entry), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  const prepack = run('npm', ['run', 'prepack'], copy);
  expect(prepack.status, prepack.stderr).toBe(0);
  const pack = run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], copy);
  expect(pack.status, pack.stderr).toBe(0);
  tarball = join(work, (JSON.parse(pack.stdout) as Array<{ filename: string }>)[0]!.filename);

  // better-sqlite3's install script fetches a prebuilt binary before it would compile one: here
  // from a mirror on the loopback registry (the one `npm ci` compiled, packed as its releases
  // are), named by the variable its installer reads for a mirror. An install that compiled
  // instead would take minutes of the suite; the test checks that the mirror was used.
  const sqlite = JSON.parse(readFileSync(join(ROOT, 'node_modules/better-sqlite3/package.json'), 'utf8')) as { version: string };
  const prebuilt = `/prebuilt/v${sqlite.version}/better-sqlite3-v${sqlite.version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  mkdirSync(join(work, 'prebuilt'));
  const packed = run('tar', ['-czf', join(work, 'prebuilt', 'better-sqlite3.tar.gz'), '-C', join(ROOT, 'node_modules/better-sqlite3'), 'build/Release/better_sqlite3.node'], work);
  expect(packed.status, packed.stderr).toBe(0);
  registry = await startLocalRegistry(ROOT, new Map([[prebuilt, join(work, 'prebuilt', 'better-sqlite3.tar.gz')]]));
  prefix = join(work, 'prefix');
  mkdirSync(prefix);
  // A cache of its own: nothing comes from an earlier install.
  // Not spawnSync: the registry answers on this process's event loop.
  installed = await runAsync('npm', ['install', '--global', '--prefix', prefix, '--cache', join(work, 'npm-cache'), '--registry', `${registry.url}/`, '--no-audit', '--no-fund', tarball], work, {
    npm_config_better_sqlite3_binary_host: `${registry.url}/prebuilt`,
    npm_config_build_from_source: 'false',
    npm_config_update_notifier: 'false',
  });
}, 600_000);

afterAll(async () => {
  await registry?.close();
});

describe('the npm package', () => {
  it('holds what running needs and nothing else', () => {
    const list = run('tar', ['-tzf', tarball], work).stdout.split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
    for (const needed of ['bin/vidfeeds.js', 'dist/cli/main.js', 'dist/pipeline/threads/write-worker.js', 'templates/embed/html5.hbs', 'templates/hcard/hcard.hbs', 'schemas/vidfeeds.config.schema.json', 'schemas/formats/atom-rfc4287.rng', 'docs/schemas/report.schema.json', 'docs/report.md', 'docs/systemd/vidfeeds-watch.service', 'package.json', 'README.md']) {
      expect(list, needed).toContain(needed);
    }
    const unwanted = list.filter((f) => /^(src|test|\.ci|out|data|dist\/bench)\//.test(f) || f.endsWith('.map') || f.startsWith('schemas/formats/samples/') || f.endsWith('.ts') || f === 'tsconfig.json');
    expect(unwanted).toEqual([]);
    // Every module the compiled code has is the compiled sources': nothing stale from an older build.
    const modules = list.filter((f) => f.startsWith('dist/') && f.endsWith('.js')).map((f) => f.slice(5, -3));
    const sources = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('bench')).map((f) => f.slice(0, -3));
    expect(modules.sort()).toEqual(sources.sort());
  });

  it('installs into an empty prefix with no network but a loopback registry of the locked dependencies', () => {
    expect(registry.missing).toEqual([]);
    expect(registry.served, 'the prebuilt better-sqlite3 of the mirror').toHaveLength(1);
    expect(installed.status, `${installed.stdout}\n${installed.stderr}`).toBe(0);
    expect(existsSync(join(prefix, 'bin', 'vidfeeds'))).toBe(true);
  });

  it('runs demo, build, check and the rest from another folder', () => {
    const site = join(work, 'site');
    mkdirSync(site);
    const version = vidfeeds(['--version'], site);
    expect(version.stdout.trim()).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);

    const demo = vidfeeds(['demo', '--db', 'site.sqlite', '--users', '12'], site);
    expect(demo.status, demo.stderr).toBe(0);
    expect(demo.stderr).toContain('vidfeeds serve --db site.sqlite --out out');
    const build = vidfeeds(['build', '--db', 'site.sqlite', '--out', 'out'], site);
    expect(build.status, build.stderr).toBe(0);
    expect(build.stderr).toMatch(/full build .* written/);
    expect(readFileSync(join(site, 'out', 'alice', 'rss', 'index.rss'), 'utf8')).toContain('<rss');
    expect(existsSync(join(site, 'out', 'sitemap.xml'))).toBe(true);
    // check reads the shipped schemas (schemas/formats, docs/schemas) from where the package is.
    const check = vidfeeds(['check', '--out', 'out', '--db', 'site.sqlite'], site);
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    expect(check.stderr).not.toContain('not found');

    const init = vidfeeds(['init', '--write-config', '--base-url', 'https://videos.example.org'], site);
    expect(init.status, init.stderr).toBe(0);
    const schema = (JSON.parse(readFileSync(join(site, 'vidfeeds.config.json'), 'utf8')) as { $schema: string }).$schema;
    expect(existsSync(fileURLToPath(schema))).toBe(true);
    expect(fileURLToPath(schema).startsWith(prefix)).toBe(true);

    for (const args of [['formats'], ['hosting', 'nginx', '--root', 'out'], ['hosting', 'manifest', '--root', 'out'], ['watch', '--help'], ['serve', '--help']]) {
      const result = vidfeeds(args, site);
      expect(result.status, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    }
  });

  it('serves the built tree', async () => {
    const site = join(work, 'site');
    const server = spawn(join(prefix, 'bin', 'vidfeeds'), ['serve', '--db', 'site.sqlite', '--out', 'out', '--port', '0'], { cwd: site, env: { PATH: installedPath(), HOME: work } });
    try {
      const { port } = await serving(server);
      const response = await fetch(`http://127.0.0.1:${port}/alice/foaf/`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/rdf+xml; charset=utf-8');
    } finally {
      server.kill('SIGTERM');
    }
  });
});
