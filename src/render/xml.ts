import { XmlDocument } from './xml-document.js';
import type { Attrs, XmlElement } from './xml-element.js';
import type { XmlEngine } from './xml-engine.js';
import { NOT_STREAMABLE, XmlStream } from './xml-stream.js';

/**
 * All XML goes through here. Formats describe elements (the RSS and Atom feeds, the hottest
 * documents, write their markup themselves, their values through xmlLeaf and xmlAttr);
 * xmlbuilder2 validates names and escapes text; this module adds the two things the builder leaves
 * to its caller:
 *
 * 1. Characters XML 1.0 forbids (most C0 controls, lone surrogates, U+FFFE/U+FFFF) are removed.
 * 2. xmlbuilder2 deliberately leaves an `&` that starts something entity-shaped (`&copy;`, `&#65;`)
 *    unescaped, assuming the caller pre-escaped it. Our text is never pre-escaped, so such an `&`
 *    would yield an undefined entity (not well-formed) or silently change the text (`&lt;` read
 *    back as `<`). We escape exactly those ampersands, and the builder escapes all the others.
 *
 * Speed. Building xmlbuilder2's DOM for every element made it most of the rendering
 * (docs/performance.md, "Figures behind the code"). So documents are written, giving the same
 * bytes, in one of three ways:
 *
 * - streamed (xmlDocument, how formats make documents): written as the calls come, with no tree,
 *   doing exactly what the builder's serialiser does for the documents our formats make. Every
 *   element and attribute name is one the builder accepts (a plain ASCII name, or else checked
 *   once per distinct name by the builder), and after (2) above the builder's escaping is "every
 *   `&`, `<`, `>` in text, and also `"` in attribute values". It takes documents made in document
 *   order (see xmlDocument);
 * - recorded (XmlDocument): a plain tree of the calls, in any order, which `end()` serialises the
 *   same way when the document has that simple shape;
 * - anything outside it (namespace declarations below the root, an undeclared prefix, a name the
 *   builder refuses or reads specially) is replayed into xmlbuilder2 call for call, as this module
 *   always did, so the builder decides.
 *
 * A long flat document (a sitemap part: 50,000 `<url>` entries) is not recorded at all:
 * FlatXmlDocument writes each entry as it is added, the fast path's way, when the fast path would
 * take the document, so memory does not grow with it.
 *
 * test/render/xml-equivalence.test.ts holds every way and the flat writer to the original
 * builder-only module with random documents and hostile text, and the demo site to the byte.
 *
 * xmlbuilder2 is loaded the first time a document or a name needs it, which the documents of our
 * formats never do (xmlbuilder-loader.ts).
 *
 * Where each part lives: the text (forbidden characters, escaping, CDATA) in xml-text.ts; which
 * names the fast path takes in xml-names.ts; the stream in xml-stream.ts; the recorded tree and
 * its serialiser in recorded-tree.ts, the recorded document in xml-document.ts; the flat writer
 * in flat-xml-document.ts; which way is used in xml-engine.ts (a parameter of each document); the
 * builder's loading in xmlbuilder-loader.ts. Formats make documents through `xmlDocument` here.
 */

/**
 * Makes a document: calls `write` with its root element, and returns the document as XmlDocument's
 * `end()` writes it. How formats make documents.
 *
 * On the fast engine the document is written as the calls come, with no tree (recording a feed's
 * tree and then walking it was half of rendering it): each value is cleaned (xmlChars) and escaped
 * as it arrives, and an element's end tag is written when something is appended to an element
 * outside it, or at the end. That takes documents made in document order, with the names the
 * fast path takes (every document our formats make). Any other call (appending to an element
 * already closed, a name only xmlbuilder2 can judge, a namespace declaration below the root) stops
 * the stream, and `write` runs again on an XmlDocument, which writes it as it always did. So
 * `write` must make the same calls each time it runs: a format's render is a pure function of
 * its data. test/render/xml-equivalence.test.ts holds streamed documents to the builder.
 */
export function xmlDocument(
  rootName: string,
  attrs: Attrs | undefined,
  write: (root: XmlElement) => void,
  { doctype, engine = 'fast' }: { doctype?: { systemId: string }; engine?: XmlEngine } = {},
): string {
  if (engine === 'fast') {
    try {
      const stream = new XmlStream(rootName, attrs, doctype);
      write(stream.root);
      xmlDocuments.streamed++;
      return stream.end();
    } catch (error) {
      if (error !== NOT_STREAMABLE) throw error;
    }
  }
  const doc = new XmlDocument(rootName, attrs, doctype, engine);
  write(doc.root);
  xmlDocuments.recorded++;
  return doc.end();
}

/** How many documents xmlDocument has made in this thread each way (for the tests that hold formats to the stream). */
export const xmlDocuments = { streamed: 0, recorded: 0 };

/** Namespaces used by more than one format. */
export const NS = {
  atom: 'http://www.w3.org/2005/Atom',
  media: 'http://search.yahoo.com/mrss/',
  dc: 'http://purl.org/dc/elements/1.1/',
  opensearch: 'http://a9.com/-/spec/opensearch/1.1/',
  sitemap: 'http://www.sitemaps.org/schemas/sitemap/0.9',
  xspf: 'http://xspf.org/ns/0/',
} as const;
