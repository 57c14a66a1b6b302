// The builder-only src/render/xml.ts as it was before the fast path (main at 53cc061), kept verbatim
// as the oracle for test/render/xml-equivalence.test.ts. Do not edit: it is what the fast path must reproduce.
import { create } from 'xmlbuilder2';
import type { XMLBuilder } from 'xmlbuilder2/lib/interfaces.js';

/**
 * All XML goes through here. Formats describe elements; xmlbuilder2 validates names and escapes
 * text; this module adds the two things the builder leaves to its caller:
 *
 * 1. Characters XML 1.0 forbids (most C0 controls, lone surrogates, U+FFFE/U+FFFF) are removed.
 * 2. xmlbuilder2 deliberately leaves an `&` that starts something entity-shaped (`&copy;`, `&#65;`)
 *    unescaped, assuming the caller pre-escaped it. Our text is never pre-escaped, so such an `&`
 *    would yield an undefined entity (not well-formed) or silently change the text (`&lt;` read
 *    back as `<`). We escape exactly those ampersands, and the builder escapes all the others.
 */

// Everything outside XML 1.0's Char production. With the u flag a lone surrogate is one code point.
const FORBIDDEN = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
const ENTITY_SHAPED_AMPERSAND = /&(?=[A-Za-z]+;|#\d+;)/g;

/**
 * Text as XML 1.0 can carry it: forbidden characters removed, and line ends as every XML parser
 * reports them (CR LF and a lone CR become LF, XML 1.0 section 2.11), so a value reads back exactly
 * as we hold it, and equals the same value in a JSON form.
 */
export function xmlChars(text: string): string {
  return text.replace(FORBIDDEN, '').replace(/\r\n?/g, '\n');
}

/** Text ready for the builder's `txt` or `att`. */
function forBuilder(text: string): string {
  return xmlChars(text).replace(ENTITY_SHAPED_AMPERSAND, '&amp;');
}

/** CDATA sections for `text`: one section cannot hold `]]>`, so it is split across two. */
export function cdataSections(text: string): string[] {
  return xmlChars(text)
    .split(']]>')
    .map((part, i, all) => (i > 0 ? '>' : '') + part + (i < all.length - 1 ? ']]' : ''));
}

export type AttrValue = string | number | null | undefined;
export type Attrs = Record<string, AttrValue>;

function cleanAttrs(attrs: Attrs | undefined): Record<string, string> | undefined {
  if (attrs === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined) continue;
    out[name] = forBuilder(String(value));
  }
  return out;
}

/** One element under construction. */
export class XmlElement {
  constructor(private readonly node: XMLBuilder) {}

  /** Appends a child element and returns it. Attributes that are null or undefined are left out. */
  el(name: string, attrs?: Attrs): XmlElement {
    return new XmlElement(this.node.ele(name, cleanAttrs(attrs)));
  }

  /** Appends `<name attrs>text</name>` and returns this element, for chaining. */
  leaf(name: string, text: string | number, attrs?: Attrs): this {
    const child = this.node.ele(name, cleanAttrs(attrs));
    const value = forBuilder(String(text));
    if (value !== '') child.txt(value);
    return this;
  }

  /** Like `leaf`, but only when `text` is present. */
  optionalLeaf(name: string, text: string | number | null | undefined, attrs?: Attrs): this {
    if (text !== null && text !== undefined && text !== '') this.leaf(name, text, attrs);
    return this;
  }

  /** Appends `<name>` holding `html` as CDATA (for formats that carry HTML). */
  cdata(name: string, html: string): this {
    const child = this.node.ele(name);
    for (const section of cdataSections(html)) child.dat(section);
    return this;
  }

  /** Appends text to this element. */
  text(text: string): this {
    const value = forBuilder(text);
    if (value !== '') this.node.txt(value);
    return this;
  }
}

/** A document with its root element. `end()` serialises it. */
export class XmlDocument {
  readonly root: XmlElement;
  private readonly doc: XMLBuilder;

  constructor(rootName: string, attrs?: Attrs, doctype?: { systemId: string }) {
    this.doc = create({ version: '1.0', encoding: 'UTF-8' });
    if (doctype !== undefined) this.doc.dtd({ name: rootName, sysID: doctype.systemId });
    this.root = new XmlElement(this.doc.ele(rootName, cleanAttrs(attrs)));
  }

  /** Serialises compactly (smaller files, no whitespace added to text), ending in a newline. */
  end(): string {
    return `${this.doc.end({ prettyPrint: false })}\n`;
  }
}

/** Namespaces used by more than one format. */
export const NS = {
  atom: 'http://www.w3.org/2005/Atom',
  media: 'http://search.yahoo.com/mrss/',
  dc: 'http://purl.org/dc/elements/1.1/',
  opensearch: 'http://a9.com/-/spec/opensearch/1.1/',
  sitemap: 'http://www.sitemaps.org/schemas/sitemap/0.9',
  xspf: 'http://xspf.org/ns/0/',
} as const;
