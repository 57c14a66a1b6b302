import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

describe("package.json's files", () => {
  it('names only what the package has (dist/ is built by prepack)', () => {
    const { files } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
    const named = files.filter((entry) => !entry.startsWith('!') && entry !== 'dist/');
    expect(named.filter((entry) => !existsSync(join(ROOT, entry)))).toEqual([]);
  });
});
