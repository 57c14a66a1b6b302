import { describe, expect, it } from 'vitest';
import { isPlainWebUrl, parsedWebUrl, webUrl } from '../../src/render/urls.js';

/**
 * `webUrl` takes a URL the WHATWG parser would return unchanged as it is, and parses the rest
 * (src/render/urls.ts). The parser is the oracle: for every string, both ways give the same answer.
 */

/** A small deterministic generator (mulberry32), so a failure names a string that fails again. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SCHEMES = ['http://', 'https://', 'HTTP://', 'Https://', 'ftp://', 'http:/', 'http:', 'javascript:', 'data:', '', ' http://', 'http:\\\\'];
const LABELS = ['example', 'org', 'a', 'b-c', '-a', 'a-', 'xn--bcher-kva', 'xn--', 'XN--abc', '0x7f', '127', '1', '08', 'localhost', 'EXAMPLE', 'é', '_', 'a_b', '', 'com', 'x', 'ab--cd'];
const HOST_TAILS = ['', '.', ':80', ':443', ':8080', ':0', ':65536', ':08080', '@evil', ' ', '%41'];
const PATH_PIECES = [
  '/', 'a', 'B', 'index.rss', '.', '..', '.well-known', '%2e', '%2E%2e', '%zz', '%41', ' ', '\\', "'", '"', '<', '>', '`', '{', '}', '|', '^',
  '?', '??', '#', '#x', '=', '&', '@', ':', '~', '!', '$', '(', ')', '*', '+', ',', ';', 'é', '\t', '\n', '\u0000', '\uFFFD', '😀',
];

function pick<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)]!;
}

/** Pieces a plain URL is made of: most candidates are plain but for one piece or two. */
const PLAIN_LABELS = ['example', 'org', 'a', 'b-c', 'com', 'localhost'];
const PLAIN_PIECES = ['/', 'a', 'B', 'index.rss', '%41', '=', '&', '~', '-'];

function candidate(next: () => number): string {
  const odd = () => next() < 0.1;
  const labels = Array.from({ length: 1 + Math.floor(next() * 3) }, () => pick(next, odd() ? LABELS : PLAIN_LABELS));
  let path = next() < 0.05 ? '' : '/';
  const pieces = Math.floor(next() * 6);
  for (let i = 0; i < pieces; i++) path += pick(next, odd() ? PATH_PIECES : PLAIN_PIECES);
  const tail = next() < 0.9 ? '' : pick(next, HOST_TAILS);
  return `${next() < 0.85 ? pick(next, ['http://', 'https://']) : pick(next, SCHEMES)}${labels.join('.')}${tail}${path}`;
}

describe('webUrl', () => {
  it('answers as the WHATWG URL parser for every generated string, taking many as they are', () => {
    const next = random(17);
    let plain = 0;
    let parsed = 0;
    for (let i = 0; i < 30_000; i++) {
      const value = candidate(next);
      const expected = parsedWebUrl(value);
      if (webUrl(value) !== expected) expect.fail(`${JSON.stringify(value)}: ${JSON.stringify(webUrl(value))}, the parser says ${JSON.stringify(expected)}`);
      if (isPlainWebUrl(value)) plain++;
      else if (expected !== null) parsed++;
    }
    // Both ways are exercised: the test says nothing otherwise.
    expect(plain).toBeGreaterThan(3_000);
    expect(parsed).toBeGreaterThan(3_000);
  });

  it('takes plain URLs as they are and leaves the rest to the parser', () => {
    for (const value of ['https://videos.example.org/files/v005crn.flv', 'http://localhost/a?b=c&d=%41', 'https://a-b.example/x/y/']) {
      expect(isPlainWebUrl(value)).toBe(true);
      expect(webUrl(value)).toBe(value);
    }
    const parsedAs: Record<string, string | null> = {
      'HTTP://Example.org/a': 'http://example.org/a',
      'http://example.org': 'http://example.org/',
      'http://example.org:80/a': 'http://example.org/a',
      'http://0x7f.1/': 'http://127.0.0.1/',
      'http://example.org/a/../b': 'http://example.org/b',
      'http://example.org/a/%2e%2E/b': 'http://example.org/b',
      'http://example.org/a b': 'http://example.org/a%20b',
      "http://example.org/?q='x'": 'http://example.org/?q=%27x%27',
      'http://example.org\\a': 'http://example.org/a',
      'http://xn--bcher-kva.example/': 'http://xn--bcher-kva.example/',
      'http://user@example.org/': 'http://user@example.org/',
      'javascript:alert(1)//http://example.org/': null,
      'http:///': null,
    };
    for (const [value, expected] of Object.entries(parsedAs)) {
      expect(isPlainWebUrl(value), value).toBe(false);
      expect(webUrl(value), value).toBe(expected);
    }
  });
});
