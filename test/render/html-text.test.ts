import { parseFragment } from 'parse5';
import { describe, expect, it } from 'vitest';
import { htmlText } from '../../src/render/xml-text.js';

/** What an HTML parser (parse5, as browsers parse) reads a fragment as: its nodes' names and text. */
function nodes(fragment: string): Array<[string, string]> {
  const root = parseFragment(fragment) as unknown as { childNodes: Array<{ nodeName: string; value?: string }> };
  return root.childNodes.map((node) => [node.nodeName, node.value ?? '']);
}

describe('htmlText', () => {
  it.each(['<b>bold<b>', '<script>alert(1)</script>', 'AT&T', '&copy; 2026', '&#60;', 'Q&A <Videos>', 'a < b & c > d', '&amp;', '&'])(
    'is read by an HTML parser as one text node holding %j',
    (text) => {
      expect(nodes(htmlText(text))).toEqual([['#text', text]]);
    },
  );

  it('leaves text that reads the same as HTML and as plain text as it is', () => {
    for (const text of ['Q & A', "Bob's videos", 'a > b', '"quoted" = `ticked`', 'plain']) expect(htmlText(text)).toBe(text);
  });
});
