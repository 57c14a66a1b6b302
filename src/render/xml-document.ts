import type { XMLBuilder } from 'xmlbuilder2/lib/interfaces.js';
import {
  cleanElement,
  CDATA,
  checkElementName,
  ELEMENT,
  LEAF,
  newElement,
  NO_ATTRS,
  recordAttrs,
  serialize,
  TEXT,
  type ElementNode,
  type LeafNode,
  type Recording,
} from './recorded-tree.js';
import { createXmlBuilder } from './xmlbuilder-loader.js';
import type { Attrs, XmlElement } from './xml-element.js';
import type { XmlEngine } from './xml-engine.js';
import { numberText } from './number-text.js';
import { fastPathTakesDoctype } from './xml-names.js';
import { forBuilder, MAYBE_FORBIDDEN, sections, XML_DECLARATION } from './xml-text.js';

/** One element of a recorded document (XmlDocument, and FlatXmlDocument's nested children). */
export class RecordedElement implements XmlElement {
  /** @internal */
  constructor(
    private readonly node: ElementNode,
    private readonly recording: Recording,
  ) {}

  /** Appends a child element and returns it. Attributes that are null or undefined are left out. */
  el(name: string, attrs?: Attrs): XmlElement {
    const child = newElement(name, attrs, this.recording, false);
    this.node.children.push(child);
    return new RecordedElement(child, this.recording);
  }

  /** Appends `<name attrs>text</name>` and returns this element, for chaining. */
  leaf(name: string, text: string | number, attrs?: Attrs): this {
    const recorded = attrs === undefined ? NO_ATTRS : recordAttrs(attrs, this.recording, false);
    checkElementName(name, this.recording);
    this.node.children.push({ kind: LEAF, name, attrs: recorded, text: typeof text === 'string' ? text : numberText(text) });
    return this;
  }

  /** Like `leaf`, but only when `text` is present. */
  optionalLeaf(name: string, text: string | number | null | undefined, attrs?: Attrs): this {
    if (text !== null && text !== undefined && text !== '') this.leaf(name, text, attrs);
    return this;
  }

  /** Appends `<name>` holding `html` as CDATA (for formats that carry HTML). */
  cdata(name: string, html: string): this {
    const child = newElement(name, undefined, this.recording, false);
    // One child, split into sections (cdataSections) when written.
    child.children.push({ kind: CDATA, text: html });
    this.node.children.push(child);
    return this;
  }

  /** Appends text to this element. */
  text(text: string): this {
    if (text !== '') this.node.children.push({ kind: TEXT, text });
    return this;
  }
}

/**
 * A recorded document with its root element: elements may be appended to in any order, and
 * `end()` serialises it. xmlDocument falls back to it when a document cannot be streamed.
 */
export class XmlDocument {
  readonly root: XmlElement;
  private readonly rootNode: ElementNode;
  private readonly recording: Recording = { prefixes: new Set(), simple: true };

  constructor(
    private readonly rootName: string,
    attrs?: Attrs,
    private readonly doctype?: { systemId: string },
    private readonly engine: XmlEngine = 'fast',
  ) {
    this.rootNode = newElement(rootName, attrs, this.recording, true);
    if (!fastPathTakesDoctype(doctype)) this.recording.simple = false;
    this.root = new RecordedElement(this.rootNode, this.recording);
  }

  /** Whether `end()` takes the fast path (for the equivalence tests). */
  get takesFastPath(): boolean {
    return this.fastBody() !== null;
  }

  /** Serialises compactly (smaller files, no whitespace added to text), ending in a newline. */
  end(): string {
    const body = this.fastBody();
    if (body === null) return this.endWithBuilder();
    const doctype = this.doctype === undefined ? '' : `<!DOCTYPE ${this.rootName} SYSTEM "${this.doctype.systemId}">`;
    return `${XML_DECLARATION}${doctype}${body}\n`;
  }

  /**
   * The root element as the fast path writes it, or null when the builder must write the document.
   *
   * Texts and attribute values are recorded as given, and the forbidden characters (see xmlChars)
   * are looked for once, in the written root, instead of in each of its hundreds of values (a
   * fifth of rendering a feed). Every value is in the written root, escaped but with all its
   * characters, so when the root holds none, xmlChars would have changed no value. When it holds
   * some (or a surrogate pair, or CR: the quick test cannot tell), every value is cleaned as xmlChars
   * does, the checks the fast path depends on are made again on the clean values, and the document
   * is written from those, either way.
   */
  private fastBody(): string | null {
    if (this.engine !== 'fast' || !this.recording.simple) {
      this.clean();
      return null;
    }
    if (!this.cleaned) {
      const body = serialize(this.rootNode);
      if (!MAYBE_FORBIDDEN.test(body)) return body;
      this.clean();
      if (!this.recording.simple) return null;
    }
    return serialize(this.rootNode);
  }

  private cleaned = false;

  /** Cleans every recorded value in place (see fastBody) and decides again whether the fast path can write it. */
  private clean(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    const recording: Recording = { prefixes: new Set(), simple: fastPathTakesDoctype(this.doctype) };
    cleanElement(this.rootNode, recording, true);
    this.recording.simple = recording.simple;
  }

  /** The builder path: the recorded calls, replayed into xmlbuilder2 exactly as they were made. */
  private endWithBuilder(): string {
    const doc = createXmlBuilder({ version: '1.0', encoding: 'UTF-8' });
    if (this.doctype !== undefined) doc.dtd({ name: this.rootName, sysID: this.doctype.systemId });
    replay(doc, this.rootNode);
    return `${doc.end({ prettyPrint: false })}\n`;
  }
}

function replay(parent: XMLBuilder, node: ElementNode | LeafNode): void {
  let attrs: Record<string, string> | undefined;
  if (node.attrs.length > 0) {
    attrs = {};
    for (let i = 0; i < node.attrs.length; i += 2) attrs[node.attrs[i]!] = forBuilder(node.attrs[i + 1]!);
  }
  const element = parent.ele(node.name, attrs);
  if (node.kind === LEAF) {
    if (node.text !== '') element.txt(forBuilder(node.text));
    return;
  }
  for (const child of node.children) {
    if (child.kind === ELEMENT || child.kind === LEAF) replay(element, child);
    else if (child.kind === TEXT) element.txt(forBuilder(child.text));
    else for (const section of sections(child.text)) element.dat(section);
  }
}
