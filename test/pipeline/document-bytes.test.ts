import { describe, expect, it } from 'vitest';
import { documentBytes } from '../../src/pipeline/write/document-bytes.js';

describe('documentBytes', () => {
  it('gives the UTF-8 of any text, as Buffer.from does, whatever its size', () => {
    const texts = [
      '',
      '<rss version="2.0"/>',
      'café ☃ 😀 中文',
      // A lone surrogate: U+FFFD, as Buffer.from writes it.
      'a\uD800b\uDC00c',
      'x'.repeat(70_000),
      `${'é'.repeat(200_000)}😀`,
      // Beyond the reused memory: a buffer of its own.
      '😀'.repeat(300_000),
    ];
    for (const text of texts) expect(documentBytes(text).equals(Buffer.from(text, 'utf8'))).toBe(true);
  });

  it('reuses its memory for the next document, and gives a large one memory of its own', () => {
    const first = documentBytes('first document');
    const copy = Buffer.from(first);
    documentBytes('second');
    expect(first.equals(copy)).toBe(false);
    const large = documentBytes('y'.repeat(400_000));
    const kept = Buffer.from(large);
    documentBytes('third');
    expect(large.equals(kept)).toBe(true);
  });
});
