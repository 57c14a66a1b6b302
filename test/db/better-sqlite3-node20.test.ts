import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EDITS, patchSources, VERSION } from '../../scripts/better-sqlite3-node20.mjs';

const root = dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));
const installed = (file: string) => readFileSync(join(root, file), 'utf8');
const compiledHere = Number(process.versions.modules) < 127 && existsSync(join(root, 'build', 'Makefile'));

/** The sources as published: the installed ones with the patch taken out again. */
function published(file: string): string {
  let text = installed(file);
  for (const edit of EDITS) if (edit.file === file) text = text.split(edit.to).join(edit.from);
  return text;
}

describe('the better-sqlite3 patch for Node 20 (scripts/better-sqlite3-node20.mjs)', () => {
  it('is for the version package.json pins', () => {
    const pinned = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).dependencies['better-sqlite3'];
    expect(pinned).toBe(VERSION);
  });

  it.runIf(compiledHere)('was applied by the install, and the binary rebuilt', () => {
    expect(patchSources(installed)).toEqual({ state: 'patched' });
    expect(existsSync(join(root, 'build', 'Release', '.vidfeeds-node22-rows'))).toBe(true);
  });

  it('turns the published sources into the patched ones, each gate lifted', () => {
    const patch = patchSources(published);
    expect(patch.state).toBe('changed');
    if (patch.state !== 'changed') return;
    for (const [file, text] of patch.texts) {
      expect(text).not.toContain(EDITS[1]!.from);
      expect(text).not.toContain('NODE_MODULE_VERSION >= 127');
      if (compiledHere) expect(text).toBe(installed(file));
    }
    expect(patch.texts.get('src/better_sqlite3.cpp')).toContain('struct LocalVector : std::vector<Local<T>>');
  });

  it('patches only what is left when some files are patched already', () => {
    const patch = patchSources((file) => (file === 'src/util/data.cpp' ? patchedText('src/util/data.cpp') : published(file)));
    expect(patch.state).toBe('changed');
    if (patch.state !== 'changed') return;
    // The same sources as patching them all at once, the patched file passed through as it was.
    for (const { file } of EDITS) expect(patch.texts.get(file)).toBe(patchedText(file));
  });

  it('writes nothing for sources it does not know', () => {
    expect(patchSources((file) => (file === 'src/objects/statement.cpp' ? '// another version\n' : published(file)))).toEqual({
      state: 'unknown',
      file: 'src/objects/statement.cpp',
    });
    // One gate of two: a different version, not half of ours.
    const oneGate = (file: string) => {
      const text = published(file);
      return file === 'src/objects/statement.cpp' ? text.replace(EDITS[2]!.from, '#if 0') : text;
    };
    expect(patchSources(oneGate)).toMatchObject({ state: 'unknown', file: 'src/objects/statement.cpp' });
  });
});

function patchedText(file: string): string {
  const patch = patchSources(published);
  if (patch.state !== 'changed') throw new Error('expected the published sources to need the patch');
  return patch.texts.get(file)!;
}
