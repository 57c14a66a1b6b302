import { createRequire } from 'node:module';
import type * as Xmlbuilder2 from 'xmlbuilder2';
import type { XMLBuilder, XMLBuilderCreateOptions } from 'xmlbuilder2/lib/interfaces.js';

/**
 * All XML goes through here. Formats describe elements (the RSS feed, the hottest document, writes
 * its markup itself, its values through xmlLeaf and xmlAttr); xmlbuilder2 validates names and
 * escapes text; this module adds the two things the builder leaves to its caller:
 *
 * 1. Characters XML 1.0 forbids (most C0 controls, lone surrogates, U+FFFE/U+FFFF) are removed.
 * 2. xmlbuilder2 deliberately leaves an `&` that starts something entity-shaped (`&copy;`, `&#65;`)
 *    unescaped, assuming the caller pre-escaped it. Our text is never pre-escaped, so such an `&`
 *    would yield an undefined entity (not well-formed) or silently change the text (`&lt;` read
 *    back as `<`). We escape exactly those ampersands, and the builder escapes all the others.
 *
 * Speed (docs/performance.md). Building xmlbuilder2's DOM costs about 40 µs per element, which made
 * rendering half of a build. So documents are written, giving the same bytes, in one of three ways:
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
 * formats never do: loaded, it took about 14 MB of memory and 60 ms in each thread that renders
 * (the CLI's, the build's, each render thread; docs/performance.md).
 */
const require = createRequire(import.meta.url);
let builder: typeof Xmlbuilder2 | null = null;

function create(options: XMLBuilderCreateOptions = {}): XMLBuilder {
  builder ??= require('xmlbuilder2') as typeof Xmlbuilder2;
  return builder.create(options);
}

/** What every document starts with. */
export const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';

// Everything outside XML 1.0's Char production. With the u flag a lone surrogate is one code point.
const FORBIDDEN = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
// A quick test without the u flag: also true for every surrogate (valid pairs included) and for CR;
// then the exact replacements below decide. Most text is plain and skips them altogether. Written
// as the characters it finds, not as the complement of those it lets through
// ([^\t\n\u0020-\uD7FF\uE000-\uFFFD], the same set of UTF-16 units): V8 scans for it twice as fast.
const MAYBE_FORBIDDEN = /[\u0000-\u0008\u000B-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;
const ENTITY_SHAPED_AMPERSAND = /&(?=[A-Za-z]+;|#\d+;)/g;

/**
 * Text as XML 1.0 can carry it: forbidden characters removed, and line ends as every XML parser
 * reports them (CR LF and a lone CR become LF, XML 1.0 section 2.11), so a value reads back exactly
 * as we hold it, and equals the same value in a JSON form.
 */
export function xmlChars(text: string): string {
  return MAYBE_FORBIDDEN.test(text) ? text.replace(FORBIDDEN, '').replace(/\r\n?/g, '\n') : text;
}

/**
 * `text` as one flat string. V8 keeps a concatenation as a tree of its pieces until something
 * reads it; a piece kept and copied into many documents (an uploader's or a tag list's markup) is
 * walked again inside each document's tree when that document is encoded, unless flattened once.
 * Reading a character flattens a concatenation in place (`Number(text)` would too, but the
 * optimizing compiler drops a conversion whose result is unused: measured, it kept the tree).
 */
export function flat(text: string): string {
  text.charCodeAt(0);
  return text;
}

/** Text ready for the builder's `txt` or `att` (the builder path only). */
function forBuilder(text: string): string {
  return text.replace(ENTITY_SHAPED_AMPERSAND, '&amp;');
}

/** CDATA sections for `text`: one section cannot hold `]]>`, so it is split across two. */
export function cdataSections(text: string): string[] {
  return sections(xmlChars(text));
}

/** CDATA sections for text already clean (see cdataSections). */
function sections(clean: string): string[] {
  if (!clean.includes(']]>')) return [clean];
  return clean
    .split(']]>')
    .map((part, i, all) => (i > 0 ? '>' : '') + part + (i < all.length - 1 ? ']]' : ''));
}

export type AttrValue = string | number | null | undefined;
export type Attrs = Record<string, AttrValue>;

// ---- The recorded tree -------------------------------------------------------------------------

const TEXT = 0;
const CDATA = 1;
const ELEMENT = 2;
const LEAF = 3;

interface TextNode {
  readonly kind: typeof TEXT | typeof CDATA;
  /** As given until the document is cleaned (XmlDocument.fastBody); not escaped. */
  readonly text: string;
}

interface ElementNode {
  readonly kind: typeof ELEMENT;
  readonly name: string;
  /** Name, value, name, value...: values as given until the document is cleaned; not escaped. */
  readonly attrs: string[];
  readonly children: Array<ElementNode | LeafNode | TextNode>;
}

/**
 * An element holding text only, as `leaf` makes it (nothing can be appended to it): one object
 * where an element with a text child took four, and leaves are most of a feed's elements.
 */
interface LeafNode {
  readonly kind: typeof LEAF;
  readonly name: string;
  readonly attrs: string[];
  /** As given until the document is cleaned; not escaped. Empty: the element is empty. */
  readonly text: string;
}

/** What the document needs to know while it is recorded: whether the fast path can write it. */
interface Recording {
  /** Namespace prefixes the root declares. */
  readonly prefixes: Set<string>;
  simple: boolean;
}

// ---- Names: plain ones are taken, the builder decides the others once per distinct name ---------

const elementNameOk = new Map<string, boolean>();
const attributeNameOk = new Map<string, boolean>();

/**
 * Names the builder takes as they are without asking it: an ASCII NCName, alone or after a prefix
 * that is one (every name our formats use). As an element name, not in the xml or xmlns namespace
 * (`xmlns`, `xml:lang`, `xmlns:media`), which the builder refuses there.
 * test/render/xml-equivalence.test.ts holds the builder to both on generated names.
 */
export const PLAIN_NAME = /^[A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?$/;
const XML_NAMESPACES = /^xml(?:ns)?(?::|$)/;

export function plainElementName(name: string): boolean {
  return PLAIN_NAME.test(name) && !XML_NAMESPACES.test(name);
}

/** Whether xmlbuilder2 takes `name` as an element name as it is (a valid QName, nothing special). */
function builderTakesElementName(name: string): boolean {
  let ok = elementNameOk.get(name);
  if (ok === undefined) {
    // '@' splits off a namespace in xmlbuilder2; such names go the builder's way.
    ok = plainElementName(name) || (!name.includes('@') && accepts(() => create().ele('urn:vidfeeds:name-check', name)));
    elementNameOk.set(name, ok);
  }
  return ok;
}

function builderTakesAttributeName(name: string): boolean {
  let ok = attributeNameOk.get(name);
  if (ok === undefined) {
    ok = PLAIN_NAME.test(name) || (!name.includes('@') && accepts(() => create().ele('check').att(name, 'urn:vidfeeds:value-check')));
    attributeNameOk.set(name, ok);
  }
  return ok;
}

function accepts(attempt: () => unknown): boolean {
  try {
    attempt();
    return true;
  } catch {
    return false;
  }
}

function prefixOf(name: string): string | null {
  const colon = name.indexOf(':');
  return colon < 0 ? null : name.slice(0, colon);
}

const XML_NAMESPACE = 'http://www.w3.org/XML/1998/namespace';

function isNamespaceDeclaration(name: string): boolean {
  return name === 'xmlns' || name.startsWith('xmlns:');
}

/**
 * Name, value, name, value... of the attributes that are there (not null or undefined), values as
 * text: as given (`raw`, see XmlDocument) or with forbidden characters removed.
 */
function recordAttrs(attrs: Attrs, recording: Recording, isRoot: boolean, raw = true): string[] {
  const out: string[] = [];
  for (const name in attrs) {
    if (!Object.hasOwn(attrs, name)) continue;
    const value = attrs[name];
    if (value === null || value === undefined) continue;
    const text = typeof value === 'string' ? value : String(value);
    out.push(name, raw ? text : xmlChars(text));
  }
  checkAttrs(out, recording, isRoot);
  return out;
}

/** Whether the fast path can still write the document once it has these attributes (name, value, ...). */
function checkAttrs(attrs: readonly string[], recording: Recording, isRoot: boolean): void {
  for (let i = 0; i < attrs.length && recording.simple; i += 2) {
    if (!fastPathTakesAttribute(attrs[i]!, attrs[i + 1]!, isRoot, recording.prefixes)) recording.simple = false;
  }
}

/**
 * Whether the fast path (streamed or recorded) writes this attribute, its value clean, as the
 * builder would: a name the builder takes as it is; a namespace declaration only on the root, of a
 * real namespace, each prefix once (added to `prefixes`). The builder drops a declaration of the
 * XML namespace (and renames elements into it).
 */
function fastPathTakesAttribute(name: string, value: string, isRoot: boolean, prefixes: Set<string>): boolean {
  if (!builderTakesAttributeName(name)) return false;
  if (!isNamespaceDeclaration(name)) return true;
  const prefix = name === 'xmlns' ? '' : name.slice('xmlns:'.length);
  if (!isRoot || value === '' || value === XML_NAMESPACE || prefix === 'xml' || prefix === 'xmlns' || prefixes.has(prefix)) return false;
  prefixes.add(prefix);
  return true;
}

/** Per element name: whether the builder takes it as it is, and its prefix (looked up once per name). */
const elementNames = new Map<string, { ok: boolean; prefix: string | null }>();

function newElement(name: string, attrs: Attrs | undefined, recording: Recording, isRoot: boolean, raw = true): ElementNode {
  const node: ElementNode = { kind: ELEMENT, name, attrs: attrs === undefined ? NO_ATTRS : recordAttrs(attrs, recording, isRoot, raw), children: [] };
  checkElementName(name, recording);
  return node;
}

/** Whether the fast path can still write the document once it has an element of this name. */
function checkElementName(name: string, recording: Recording): void {
  if (recording.simple && !fastPathTakesElementName(name, recording.prefixes)) recording.simple = false;
}

/** Whether the fast path writes an element of this name: one the builder takes as it is, its prefix (if any) declared on the root. */
function fastPathTakesElementName(name: string, prefixes: ReadonlySet<string>): boolean {
  let known = elementNames.get(name);
  if (known === undefined) {
    known = { ok: builderTakesElementName(name), prefix: prefixOf(name) };
    elementNames.set(name, known);
  }
  const { prefix } = known;
  return known.ok && (prefix === null || (prefix !== 'xml' && prefixes.has(prefix)));
}

/** Whether the fast path can write this DOCTYPE as it is (a quote in the system id goes the builder's way). */
function fastPathTakesDoctype(doctype: { systemId: string } | undefined): boolean {
  return doctype === undefined || !/["']/.test(doctype.systemId);
}

/** The attributes of an element that has none: shared, never written to. */
const NO_ATTRS: string[] = [];

/** An element of a document being made: what formats call, whichever way the document is written. */
export interface XmlElement {
  /** Appends a child element and returns it. Attributes that are null or undefined are left out. */
  el(name: string, attrs?: Attrs): XmlElement;
  /** Appends `<name attrs>text</name>` and returns this element, for chaining. */
  leaf(name: string, text: string | number, attrs?: Attrs): this;
  /** Like `leaf`, but only when `text` is present. */
  optionalLeaf(name: string, text: string | number | null | undefined, attrs?: Attrs): this;
  /** Appends `<name>` holding `html` as CDATA (for formats that carry HTML). */
  cdata(name: string, html: string): this;
  /** Appends text to this element. */
  text(text: string): this;
}

/** One element of a recorded document (XmlDocument). */
class RecordedElement implements XmlElement {
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
    this.node.children.push({ kind: LEAF, name, attrs: recorded, text: typeof text === 'string' ? text : String(text) });
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

export type XmlEngine = 'fast' | 'builder';

/**
 * Which way documents are written: 'fast' (the default) streams them or takes the fast path where
 * it can; 'builder' sends every document made here through xmlbuilder2, as before (RSS feeds are
 * markup of their own, rss.ts). For the equivalence tests and the benchmark's before/after
 * figures; the environment variable VIDFEEDS_XML_ENGINE=builder sets it too.
 */
let engine: XmlEngine = process.env.VIDFEEDS_XML_ENGINE === 'builder' ? 'builder' : 'fast';

export function setXmlEngine(next: XmlEngine): XmlEngine {
  const previous = engine;
  engine = next;
  return previous;
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
    if (engine !== 'fast' || !this.recording.simple) {
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
    const doc = create({ version: '1.0', encoding: 'UTF-8' });
    if (this.doctype !== undefined) doc.dtd({ name: this.rootName, sysID: this.doctype.systemId });
    replay(doc, this.rootNode);
    return `${doc.end({ prettyPrint: false })}\n`;
  }
}

// ---- Streaming: a document written as it is made ------------------------------------------------

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
export function xmlDocument(rootName: string, attrs: Attrs | undefined, write: (root: XmlElement) => void, doctype?: { systemId: string }): string {
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
  const doc = new XmlDocument(rootName, attrs, doctype);
  write(doc.root);
  xmlDocuments.recorded++;
  return doc.end();
}

/** How many documents xmlDocument has made in this thread each way (for the tests that hold formats to the stream). */
export const xmlDocuments = { streamed: 0, recorded: 0 };

/** What an attribute name is to the stream: anything but a plain one (taken as it is, no declaration) is checked in full. */
const PLAIN_ATTRIBUTE = 0;
const OTHER_ATTRIBUTE = 1;
const attributeNameKinds = new Map<string, number>();

function attributeNameKind(name: string): number {
  let kind = attributeNameKinds.get(name);
  if (kind === undefined) {
    kind = builderTakesAttributeName(name) && !isNamespaceDeclaration(name) ? PLAIN_ATTRIBUTE : OTHER_ATTRIBUTE;
    attributeNameKinds.set(name, kind);
  }
  return kind;
}

/** Thrown inside xmlDocument when the stream cannot take a call; never leaves it. */
const NOT_STREAMABLE = new Error('xmlDocument: not streamable');

// One test per value for both things that can change it: characters to escape, and characters
// xmlChars would change (the quick test of MAYBE_FORBIDDEN). Most values hold neither.
const TEXT_MAY_CHANGE = /[&<>\u0000-\u0008\u000B-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;
const ATTR_MAY_CHANGE = /[&<>"\u0000-\u0008\u000B-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;

/** Text content as the stream writes it: cleaned (xmlChars) and escaped. */
function xmlText(text: string): string {
  return TEXT_MAY_CHANGE.test(text) ? escapeText(xmlChars(text)) : text;
}

/**
 * For a format that writes a hot document's markup as one string (rss.ts): an attribute value,
 * and below a leaf element, exactly as the stream writes them, cleaned (xmlChars) and escaped.
 * The format's test holds its string to the same document made with xmlDocument, byte for byte.
 */
export function xmlAttr(value: string): string {
  return ATTR_MAY_CHANGE.test(value) ? escapeAttr(xmlChars(value)) : value;
}

/** `<name attrs>text</name>`, or `<name attrs/>` when the text is empty once clean. `attrs` is markup: ` a="…"`, values from xmlAttr. */
export function xmlLeaf(name: string, text: string, attrs = ''): string {
  const clean = xmlText(text);
  return clean === '' ? `<${name}${attrs}/>` : `<${name}${attrs}>${clean}</${name}>`;
}

/** `<name>` holding `html` as CDATA sections (see cdataSections). */
function xmlCdata(name: string, html: string): string {
  let out = `<${name}>`;
  // The builder writes nothing for an empty section, yet the element is not empty: `<c></c>`.
  for (const section of cdataSections(html)) if (section !== '') out += `<![CDATA[${section}]]>`;
  return `${out}</${name}>`;
}

class XmlStream {
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
          text = String(value);
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
    stream.leafText(name, typeof text === 'string' ? text : String(text));
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

/**
 * A document that is a root holding a long run of same-shaped entries, `<entry><leaf>text</leaf>
 * ...</entry>` (a sitemap's urlset and index, 50,000 entries each), written as the entries come
 * instead of recorded as a tree: the tree of such a document alone took more memory than the rest
 * of a build. Its bytes are those of an XmlDocument made with the same calls
 * (`doc.root.el(entry).leaf(name, text)...`), which test/render/xml-equivalence.test.ts checks.
 *
 * The names are all known up front, so whether the fast path can write it is decided once, here,
 * by the same checks; when it cannot, or the engine is 'builder' when the document is made, the
 * entries are recorded into an XmlDocument after all, and the builder decides as for any document.
 */
export class FlatXmlDocument {
  private readonly tree: XmlDocument | null = null;
  private readonly start: string = '';
  /** Finished text, joined every so often so the garbage of the entries dies young. */
  private readonly chunks: string[] = [];
  private pending: string[] = [];
  private entries = 0;

  constructor(
    private readonly rootName: string,
    attrs: Attrs | undefined,
    private readonly entryName: string,
    private readonly leafNames: readonly string[],
  ) {
    const recording: Recording = { prefixes: new Set(), simple: true };
    const root = newElement(rootName, attrs, recording, true, false);
    // Only the checks matter here: the root has declared its prefixes by now, as in a tree.
    for (const name of [entryName, ...leafNames]) newElement(name, undefined, recording, false);
    if (engine === 'fast' && recording.simple) this.start = `${XML_DECLARATION}${startTag(root)}`;
    else this.tree = new XmlDocument(rootName, attrs);
  }

  /** Appends one entry holding one leaf per leaf name, with these texts, in order. */
  entry(...texts: Array<string | number>): this {
    const names = this.leafNames;
    if (texts.length !== names.length) throw new Error(`<${this.entryName}> takes ${names.length} texts, got ${texts.length}`);
    this.entries++;
    if (this.tree !== null) {
      const element = this.tree.root.el(this.entryName);
      for (let i = 0; i < names.length; i++) element.leaf(names[i]!, texts[i]!);
      return this;
    }
    if (names.length === 0) {
      this.pending.push(`<${this.entryName}/>`);
    } else {
      let out = `<${this.entryName}>`;
      for (let i = 0; i < names.length; i++) out += leafElement(names[i]!, xmlChars(String(texts[i]!)));
      this.pending.push(`${out}</${this.entryName}>`);
    }
    if (this.pending.length === FLAT_CHUNK_ENTRIES) {
      this.chunks.push(this.pending.join(''));
      this.pending = [];
    }
    return this;
  }

  /** How many entries it holds. */
  get length(): number {
    return this.entries;
  }

  /** Whether it is written without a tree (for the equivalence tests). */
  get takesFastPath(): boolean {
    return this.tree === null;
  }

  /** The document, as XmlDocument's `end()` writes it. */
  end(): string {
    if (this.tree !== null) return this.tree.end();
    if (this.entries === 0) return `${this.start}/>\n`;
    // One join, so the result is one flat string and not a rope over the chunks.
    return [`${this.start}>`, ...this.chunks, ...this.pending, `</${this.rootName}>\n`].join('');
  }
}

const FLAT_CHUNK_ENTRIES = 1024;

/**
 * Removes forbidden characters from the values of `node` and below, in place, as recording them
 * through xmlChars did (text that comes out empty is dropped, as `text` drops empty text), and
 * makes the fast path's checks again on the clean values, in document order (the root first, as
 * when they were recorded).
 */
function cleanElement(node: ElementNode | LeafNode, recording: Recording, isRoot: boolean): void {
  const attrs = node.attrs;
  for (let i = 1; i < attrs.length; i += 2) attrs[i] = xmlChars(attrs[i]!);
  checkAttrs(attrs, recording, isRoot);
  checkElementName(node.name, recording);
  if (node.kind === LEAF) {
    (node as { text: string }).text = xmlChars(node.text);
    return;
  }
  const children = node.children;
  let kept = 0;
  for (const child of children) {
    if (child.kind === ELEMENT || child.kind === LEAF) {
      cleanElement(child, recording, false);
    } else {
      const text = xmlChars(child.text);
      if (text === '' && child.kind === TEXT) continue;
      (child as { text: string }).text = text;
    }
    children[kept++] = child;
  }
  children.length = kept;
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

// ---- The fast path: what xmlbuilder2's serialiser writes for a simple tree ----------------------

const TEXT_SPECIAL = /[&<>]/;
const ATTR_SPECIAL = /[&<>"]/;
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };
const escapeChar = (c: string) => ESCAPES[c]!;

function escapeText(text: string): string {
  return TEXT_SPECIAL.test(text) ? text.replace(/[&<>]/g, escapeChar) : text;
}

function escapeAttr(value: string): string {
  return ATTR_SPECIAL.test(value) ? value.replace(/[&<>"]/g, escapeChar) : value;
}

/** `<name attrs`, without the closing `>` or `/>`. */
function startTag(node: ElementNode | LeafNode): string {
  let out = `<${node.name}`;
  const attrs = node.attrs;
  for (let i = 0; i < attrs.length; i += 2) out += ` ${attrs[i]}="${escapeAttr(attrs[i + 1]!)}"`;
  return out;
}

/** `<name>text</name>`, or `<name/>` when the text is empty: a leaf as `serialize` writes it. */
function leafElement(name: string, text: string): string {
  return text === '' ? `<${name}/>` : `<${name}>${escapeText(text)}</${name}>`;
}

function serializeLeaf(node: LeafNode): string {
  const start = startTag(node);
  return node.text === '' ? `${start}/>` : `${start}>${escapeText(node.text)}</${node.name}>`;
}

function serialize(node: ElementNode): string {
  let out = startTag(node);
  const children = node.children;
  if (children.length === 0) return `${out}/>`;
  out += '>';
  for (const child of children) {
    if (child.kind === LEAF) out += child.attrs.length === 0 ? leafElement(child.name, child.text) : serializeLeaf(child);
    else if (child.kind === ELEMENT) out += serialize(child);
    else if (child.kind === TEXT) out += escapeText(child.text);
    // The builder writes nothing for an empty section, yet the element is not empty: `<c></c>`.
    else for (const section of sections(child.text)) if (section !== '') out += `<![CDATA[${section}]]>`;
  }
  return `${out}</${node.name}>`;
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
