import { closeSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Packs a built tree into two files for the floor (floor.ts): `<pack>.index` (one `size<TAB>path`
 * line per file, in the order a build writes them: site files, then by name) and `<pack>.data`
 * (the bytes, one file after the other). Hidden files are left out, as the server leaves them.
 */
export function packTree(root: string, pack: string): { files: number; bytes: number } {
  const index = openSync(`${pack}.index`, 'w');
  const data = openSync(`${pack}.data`, 'w');
  let files = 0;
  let bytes = 0;
  let lines: string[] = [];
  const walk = (dir: string, rel: string) => {
    const entries = readdirSync(dir, { withFileTypes: true })
      .filter((e) => !e.name.startsWith('.'))
      // Files before directories, each by name: site-wide files first, then user by user.
      .sort((a, b) => Number(a.isDirectory()) - Number(b.isDirectory()) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        walk(join(dir, entry.name), path);
        continue;
      }
      const body = readFileSync(join(dir, entry.name));
      writeSync(data, body);
      lines.push(`${body.length}\t${path}\n`);
      if (lines.length >= 10_000) {
        writeSync(index, lines.join(''));
        lines = [];
      }
      files++;
      bytes += body.length;
    }
  };
  try {
    walk(root, '');
    writeSync(index, lines.join(''));
  } finally {
    closeSync(index);
    closeSync(data);
  }
  return { files, bytes };
}
