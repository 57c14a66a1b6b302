import { readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { KeyList } from '../../src/deploy/key-list.js';
import { useTempDir } from '../helpers/temp-dir.js';

/**
 * The deploy report's key lists: what goes in comes back in order, as values and as a JSON array
 * (read by JSON.parse), whether held or spilled to the temporary file; the file leaves no trace.
 */

const tmp = process.env.TMPDIR;
afterEach(() => {
  if (tmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = tmp;
});

/** Keys with quotes, backslashes, line ends, multi-byte and astral characters and a lone surrogate, some long enough to cross the read chunks. */
function keys(n: number): string[] {
  const odd = ['p/"quoted"/rss/', 'p/back\\slash', 'p/line\nend', 'p/é/ü/atom', 'p/🎬/json', 'p/\ud800lone', `p/${'ß'.repeat(70_000)}`];
  return Array.from({ length: n }, (_, i) => `${odd[i % odd.length]}-${i}`);
}

describe('KeyList', () => {
  it('gives back what it holds, in order, as values and as JSON', () => {
    const list = new KeyList();
    const given = keys(20);
    list.pushAll(given);
    expect(list.length).toBe(20);
    expect([...list]).toEqual(given);
    expect(JSON.parse([...list.jsonPieces()].join(''))).toEqual(given);
    expect(list.first(3)).toEqual(given.slice(0, 3));
  });

  it('spills past its bound to a file it unlinks at once, and reads every key back in order', () => {
    const folder = useTempDir('vidfeeds-key-list-');
    process.env.TMPDIR = folder;
    const list = new KeyList(5);
    const given = keys(103);
    for (const key of given) list.push(key);
    // Nothing is left in the temporary folder while the list lives, and nothing after.
    expect(readdirSync(folder)).toEqual([]);
    expect(list.length).toBe(103);
    expect([...list]).toEqual(given);
    expect(JSON.parse([...list.jsonPieces()].join(''))).toEqual(given);
    // Read twice: the file is read from its start each time.
    expect([...list]).toEqual(given);
    expect(list.first(8)).toEqual(given.slice(0, 8));
  });

  it('is an empty array when empty', () => {
    expect([...new KeyList(2).jsonPieces()].join('')).toBe('[]');
  });
});
