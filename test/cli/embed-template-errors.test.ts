import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDemoDb } from '../helpers/site-fixture.js';
import { tempDir, useTempDir } from '../helpers/temp-dir.js';

const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin/vidfeeds.js');

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist/cli/main.js'))) throw new Error('dist/ is missing: run `npx tsc -p tsconfig.json` (npm test does) before this test');
});

/** Every path under `dir`, relative, sorted. */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

/** A working directory with a demo database, a config file and a templates directory of its own. */
function site(player: Record<string, unknown>, templates: Record<string, string> = {}) {
  const dir = useTempDir('vidfeeds-cli-');
  const demo = createDemoDb({ users: 12, seed: 3 });
  writeFileSync(join(dir, 'site.sqlite'), readFileSync(demo.file));
  mkdirSync(join(dir, 'templates/embed'), { recursive: true });
  for (const [name, source] of Object.entries(templates)) writeFileSync(join(dir, 'templates/embed', `${name}.hbs`), source);
  // The template's markup inline in the oEmbed html, where the tests read it.
  writeFileSync(join(dir, 'vidfeeds.config.json'), JSON.stringify({ baseUrl: 'https://videos.example.org', oembed: { html: 'inline' }, player }));
  return dir;
}

function build(cwd: string) {
  const result = spawnSync(process.execPath, [BIN, 'build', '--db', 'site.sqlite', '--out', 'out'], { cwd, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('vidfeeds build with a templates directory of its own', () => {
  it('finds a relative templatesDir beside the config file, whatever the working directory', () => {
    const dir = site({ template: 'mine', templatesDir: 'templates' }, { mine: '<iframe src="{{fileUrl}}"></iframe>' });
    // Run from elsewhere, as a cron job does, naming the files by absolute paths.
    const elsewhere = tempDir('vidfeeds-cwd-');
    const result = spawnSync(
      process.execPath,
      [BIN, 'build', '--config', join(dir, 'vidfeeds.config.json'), '--db', join(dir, 'site.sqlite'), '--out', join(dir, 'out')],
      { cwd: elsewhere.dir, encoding: 'utf8' },
    );
    expect(result.status, result.stderr).toBe(0);
    const html = readdirSync(join(dir, 'out'), { recursive: true, encoding: 'utf8' }).find((p) => p.endsWith(join('oembed', 'html')));
    expect(readFileSync(join(dir, 'out', html!), 'utf8')).toMatch(/^<iframe src="https:[^"]+"><\/iframe>$/); // the bare markup, as the JSON's html
  });
});

describe('vidfeeds build with an embed template that cannot be used', () => {
  it('exits 2 naming a broken template, before writing any file', () => {
    const cwd = site({ template: 'mine', templatesDir: 'templates' }, { mine: '<object>{{#each}}</object>' });
    const before = listing(cwd);
    const { code, stderr } = build(cwd);
    expect(code).toBe(2);
    expect(stderr).toContain(`vidfeeds: template ${join(cwd, 'templates/embed/mine.hbs')}: Parse error on line 1:`);
    expect(listing(cwd)).toEqual(before);
  });

  it('exits 2 naming a missing template and where it looked', () => {
    const cwd = site({ template: 'nope', templatesDir: 'templates' });
    const before = listing(cwd);
    const { code, stderr } = build(cwd);
    expect(code).toBe(2);
    expect(stderr).toMatch(/template embed\/nope\.hbs: not found \(looked in .*templates\/embed\/nope\.hbs and .*templates\/embed\/nope\.hbs\)/);
    expect(listing(cwd)).toEqual(before);
  });

  it('exits 2 when the templates directory is not there', () => {
    const cwd = site({ template: 'flash', templatesDir: 'tempaltes' });
    const before = listing(cwd);
    const { code, stderr } = build(cwd);
    expect(code).toBe(2);
    expect(stderr).toContain('(player.templatesDir) is not a directory');
    expect(listing(cwd)).toEqual(before);
  });

  it('builds with a template of the site directory when it works', () => {
    const cwd = site({ template: 'mine', templatesDir: 'templates' }, { mine: '<iframe src="{{pageUrl}}" title="{{title}}"></iframe>\n' });
    const { code, stderr } = build(cwd);
    expect(stderr).toMatch(/documents in/);
    expect(code).toBe(0);
    const html = listing(join(cwd, 'out')).filter((p) => p.endsWith('oembed/html'));
    expect(html.length).toBeGreaterThan(10);
    expect(readFileSync(join(cwd, 'out', html[0]!), 'utf8')).toMatch(/^<iframe src="https:\/\/videos\.example\.org\/[^"]+\/embed\/" title="[^"]*"><\/iframe>$/);
  });
});
