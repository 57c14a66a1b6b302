import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { templatesHash } from '../../src/pipeline/plan/incremental.js';
import { useTempDir } from '../helpers/temp-dir.js';

const ROOT = resolve(import.meta.dirname, '../..');

/** Makes template folders under `dir`: each named, holding `files` (paths inside it, folders made as needed). */
function templateFolders(dir: string): (name: string, files: Record<string, string>) => string {
  return (name, files) => {
    const path = join(dir, name);
    mkdirSync(path, { recursive: true });
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(dirname(join(path, file)), { recursive: true });
      writeFileSync(join(path, file), text);
    }
    return path;
  };
}

/** What a build is compared with to follow the change log: the code and templates by their bytes, not where they lie. */
describe('the build fingerprint', () => {
  it('hashes template folders by their files and their place in the list, not their paths', () => {
    const folder = templateFolders(useTempDir());
    const a = folder('a', { 'player/embed.hbs': '<div>{{title}}</div>' });
    const b = folder('b', { 'player/embed.hbs': '<div>{{title}}</div>' });
    const edited = folder('c', { 'player/embed.hbs': '<div>{{title}}!</div>' });
    const renamed = folder('d', { 'player/other.hbs': '<div>{{title}}</div>' });
    const empty = folder('e', {});
    expect(templatesHash([a])).toBe(templatesHash([b]));
    expect(templatesHash([edited])).not.toBe(templatesHash([a]));
    expect(templatesHash([renamed])).not.toBe(templatesHash([a]));
    // The same files, first or second of two folders, are not the same templates.
    expect(templatesHash([a, empty])).not.toBe(templatesHash([empty, a]));
  });

  it('hashes the templates alone: an editor\'s temporary and backup files beside them change nothing', () => {
    const folder = templateFolders(useTempDir());
    const plain = folder('plain', { 'embed/mine.hbs': '<video>{{title}}</video>' });
    const saving = folder('saving', {
      'embed/mine.hbs': '<video>{{title}}</video>',
      'embed/mine.hbs.tmp': '<object>{{#each}}</object>',
      'embed/mine.hbs~': '<video></video>',
      'embed/4913': '',
      'README.txt': 'notes',
    });
    expect(templatesHash([saving])).toBe(templatesHash([plain]));
    // A template of another name is one.
    const more = folder('more', { 'embed/mine.hbs': '<video>{{title}}</video>', 'embed/other.hbs': '<video></video>' });
    expect(templatesHash([more])).not.toBe(templatesHash([plain]));
  });

  it('keeps a build incremental when vidfeeds is installed in another folder', () => {
    const dir = useTempDir();
    // Two installs of the same package: its files copied, its dependencies shared.
    const install = (name: string) => {
      const to = join(dir, name);
      for (const part of ['bin', 'dist', 'templates', 'schemas', 'package.json']) cpSync(join(ROOT, part), join(to, part), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules'), join(to, 'node_modules'));
      return join(to, 'bin', 'vidfeeds.js');
    };
    const first = install('first');
    const second = install('second');
    const db = join(dir, 'site.sqlite');
    const run = (bin: string, args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', cwd: dir });
    expect(run(first, ['demo', '--db', db]).status).toBe(0);
    const build = (bin: string) => {
      const result = run(bin, ['build', '--db', db, '--out', join(dir, 'out'), '--json', '--no-notify']);
      expect(result.status, result.stderr).toBe(0);
      return JSON.parse(result.stdout) as { mode: string };
    };
    expect(build(first).mode).toBe('full');
    expect(build(second).mode).toBe('incremental');
  });
});
