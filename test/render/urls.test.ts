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

  it('publishes only RFC 3986 URIs, as the documents\' grammars read them', () => {
    // RFC 3986 appendix A for an http(s) URI: authority, path-abempty, query, fragment.
    const pct = '%[0-9A-Fa-f]{2}';
    const pchar = `(?:[A-Za-z0-9\\-._~!$&'()*+,;=:@]|${pct})`;
    const authority = `(?:(?:[A-Za-z0-9\\-._~!$&'()*+,;=:]|${pct})*@)?(?:\\[[0-9A-Fa-f:.]+\\]|(?:[A-Za-z0-9\\-._~!$&'()*+,;=]|${pct})*)(?::[0-9]*)?`;
    const rfc3986 = new RegExp(`^https?://${authority}(?:/${pchar}*)*(?:\\?(?:${pchar}|[/?])*)?(?:#(?:${pchar}|[/?])*)?$`);
    const next = random(29);
    let published = 0;
    for (let i = 0; i < 30_000; i++) {
      const value = candidate(next);
      const url = webUrl(value);
      if (url === null) continue;
      published++;
      if (!rfc3986.test(url)) expect.fail(`${JSON.stringify(value)} is published as ${JSON.stringify(url)}, which is no RFC 3986 URI`);
    }
    expect(published).toBeGreaterThan(10_000);
    const encoded: Record<string, string> = {
      'https://example.org/%zz': 'https://example.org/%25zz',
      'https://example.org/a%': 'https://example.org/a%25',
      'https://example.org/[1]?q=[2]#[3]': 'https://example.org/%5B1%5D?q=%5B2%5D#%5B3%5D',
      'https://example.org/a|b?c^d{e}`f\\g': 'https://example.org/a%7Cb?c%5Ed%7Be%7D%60f%5Cg',
      'https://example.org/#a#b': 'https://example.org/#a%23b',
      'https://example.org/#': 'https://example.org/#',
      'http://[::1]:8080/x': 'http://[::1]:8080/x',
      'http://a{b}.example/': 'http://a%7Bb%7D.example/',
    };
    for (const [value, expected] of Object.entries(encoded)) expect(webUrl(value), value).toBe(expected);
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
