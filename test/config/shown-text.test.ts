import { describe, expect, it } from 'vitest';
import { hasUnshowable, quoted, replacedUnshowable } from '../../src/config/shown-text.js';

// Written out by code point, not by the module's character classes: C0 escape, DEL, NEL and 8-bit
// CSI (C1), Arabic letter mark, zero-width space and joiner, LRM/RLM, line and paragraph
// separators, the bidi embeddings and overrides, word joiner, the isolates, the BOM, the soft
// hyphen, a language tag (beyond U+FFFF).
const ACTING = [0x1b, 0x7f, 0x85, 0x9b, 0x61c, 0x200b, 0x200d, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2060, 0x2066, 0x2067, 0x2068, 0x2069, 0xfeff, 0xad, 0xe0001];

describe('text quoted for messages', () => {
  it('writes every character that acts on a terminal or hides itself as an escape, and reads back as what is stored', () => {
    for (const code of ACTING) {
      const text = `a${String.fromCodePoint(code)}b`;
      const shown = quoted(text);
      expect(shown, code.toString(16)).toMatch(/^"a(\\u[0-9a-f]{4})+b"$/);
      expect(JSON.parse(shown)).toBe(text);
      expect(hasUnshowable(text)).toBe(true);
      expect(replacedUnshowable(text)).toBe('a\ufffdb');
    }
    expect(quoted('gnp\u202e.exe')).toBe('"gnp\\u202e.exe"');
    expect(quoted('tag\u{e0001}')).toBe('"tag\\udb40\\udc01"');
  });

  it('leaves printable text of any script as it is', () => {
    for (const text of ['alice', 'Q & A', 'עברית', 'e\u0301', '🎬', '中文', 'tab-less <b>']) {
      expect(quoted(text)).toBe(JSON.stringify(text));
      expect(hasUnshowable(text)).toBe(false);
      expect(replacedUnshowable(text)).toBe(text);
    }
  });
});
