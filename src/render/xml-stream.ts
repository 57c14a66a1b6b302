import type { Attrs, XmlElement } from './xml-element.js';
import { attributeNameKind, fastPathTakesAttribute, fastPathTakesDoctype, fastPathTakesElementName, PLAIN_ATTRIBUTE } from './xml-names.js';
import { numberText } from './number-text.js';
import { xmlAttr, xmlCdata, xmlText, XML_DECLARATION } from './xml-text.js';

/**
 * A document written as it is made, with no tree (xmlDocument's first way, src/render/xml.ts):
 * each value is cleaned and escaped as it arrives, and an element's end tag is written when
 * something is appended outside it, or at the end. A call it cannot take throws NOT_STREAMABLE.
 */

/** Thrown inside xmlDocument when the stream cannot take a call; never leaves it. */
export const NOT_STREAMABLE = new Error('xmlDocument: not streamable');

export class XmlStream {
  readonly root: StreamedElement;
  private out: string;
  /** Elements not yet closed, the root first: element n of a document is at `open[n.depth]` while it is open. */
  private readonly open: StreamedElement[] = [];
  /** Whether the innermost open element's start tag still waits for `>` (it holds nothing yet). */
  private startPending = false;
  /** Namespace prefixes the root declares. */
  private readonly prefixes = new Set<string>();

  constructor(rootName: string, attrs: Attrs | undefined, doctype: { systemId: string } | undefined) {
    if (!fastPathTakesDoctype(doctype)) throw NOT_STREAMABLE;
    this.out = `${XML_DECLARATION}${doctype === undefined ? '' : `<!DOCTYPE ${rootName} SYSTEM "${doctype.systemId}">`}`;
    this.startTag(rootName, attrs, true);
    this.root = this.push(rootName);
  }

  /** Makes `element` the innermost open element, ready for content: closes those inside it, ends its start tag. */
  enter(element: StreamedElement): void {
    const open = this.open;
    if (open[element.depth] !== element) throw NOT_STREAMABLE;
    while (open.length > element.depth + 1) this.close();
    if (this.startPending) {
      this.out += '>';
      this.startPending = false;
    }
  }

  /** Writes `<name attrs`: the start tag of an element about to be pushed, or of a leaf. */
  startTag(name: string, attrs: Attrs | undefined, isRoot = false): void {
    let out = `<${name}`;
    if (attrs !== undefined) {
      for (const attr in attrs) {
        if (!Object.hasOwn(attrs, attr)) continue;
        const value = attrs[attr];
        if (value === null || value === undefined) continue;
        let text: string;
        if (typeof value === 'number') {
          // Digits, a sign, a point, an exponent, NaN or Infinity: nothing to clean or escape.
          text = numberText(value);
        } else {
          text = xmlAttr(typeof value === 'string' ? value : String(value));
        }
        // A declaration's value is a namespace name: escaped or not, the checks read it alike.
        if ((isRoot || attributeNameKind(attr) !== PLAIN_ATTRIBUTE) && !fastPathTakesAttribute(attr, text, isRoot, this.prefixes)) {
          throw NOT_STREAMABLE;
        }
        out += ` ${attr}="${text}"`;
      }
    }
    if (!fastPathTakesElementName(name, this.prefixes)) throw NOT_STREAMABLE;
    this.out += out;
  }

  /** Opens an element whose start tag `startTag` just wrote. */
  push(name: string): StreamedElement {
    const element = new StreamedElement(this, name, this.open.length);
    this.open.push(element);
    this.startPending = true;
    return element;
  }

  /** Ends a leaf whose start tag `startTag` just wrote. */
  leafText(name: string, text: string): void {
    const clean = xmlText(text);
    this.out += clean === '' ? '/>' : `>${clean}</${name}>`;
  }

  /** Writes `<name>` holding `html` as CDATA. */
  cdata(name: string, html: string): void {
    if (!fastPathTakesElementName(name, this.prefixes)) throw NOT_STREAMABLE;
    this.out += xmlCdata(name, html);
  }

  /** Text for `element`: nothing when it is empty once clean, as XmlDocument drops it. */
  text(element: StreamedElement, text: string): void {
    const clean = xmlText(text);
    if (clean === '') return;
    this.enter(element);
    this.out += clean;
  }

  end(): string {
    while (this.open.length > 0) this.close();
    return `${this.out}\n`;
  }

  private close(): void {
    const element = this.open.pop()!;
    if (this.startPending) {
      this.out += '/>';
      this.startPending = false;
    } else {
      this.out += `</${element.name}>`;
    }
  }
}

/** One element of a streamed document: it takes content while it is open (see XmlStream.enter). */
class StreamedElement implements XmlElement {
  constructor(
    private readonly stream: XmlStream,
    readonly name: string,
    readonly depth: number,
  ) {}

  el(name: string, attrs?: Attrs): XmlElement {
    const stream = this.stream;
    stream.enter(this);
    stream.startTag(name, attrs);
    return stream.push(name);
  }

  leaf(name: string, text: string | number, attrs?: Attrs): this {
    const stream = this.stream;
    stream.enter(this);
    stream.startTag(name, attrs);
    stream.leafText(name, typeof text === 'string' ? text : numberText(text));
    return this;
  }

  optionalLeaf(name: string, text: string | number | null | undefined, attrs?: Attrs): this {
    if (text !== null && text !== undefined && text !== '') this.leaf(name, text, attrs);
    return this;
  }

  cdata(name: string, html: string): this {
    const stream = this.stream;
    stream.enter(this);
    stream.cdata(name, html);
    return this;
  }

  text(text: string): this {
    if (text !== '') this.stream.text(this, text);
    return this;
  }
}
