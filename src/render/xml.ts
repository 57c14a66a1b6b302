import { createRequire } from 'node:module';
import type * as Xmlbuilder2 from 'xmlbuilder2';
import type { XMLBuilder, XMLBuilderCreateOptions } from 'xmlbuilder2/lib/interfaces.js';

/**
 * All XML goes through here. Formats describe elements; xmlbuilder2 validates names and escapes
 * text; this module adds the two things the builder leaves to its caller:
 *
 * 1. Characters XML 1.0 forbids (most C0 controls, lone surrogates, U+FFFE/U+FFFF) are removed.
 * 2. xmlbuilder2 deliberately leaves an `&` that starts something entity-shaped (`&copy;`, `&#65;`)
 *    unescaped, assuming the caller pre-escaped it. Our text is never pre-escaped, so such an `&`
 *    would yield an undefined entity (not well-formed) or silently change the text (`&lt;` read
 *    back as `<`). We escape exactly those ampersands, and the builder escapes all the others.
 *
 * Speed (docs/performance.md). Building xmlbuilder2's DOM costs about 40 µs per element, which made
 * rendering half of a build. So a document is first recorded as a plain tree, and `end()` writes
 * it in one of two ways that give the same bytes:
 *
 * - the fast path serialises the tree itself, doing exactly what the builder's serialiser does
 *   for the documents our formats make: every element and attribute name is one the builder
 *   accepts (a plain ASCII name, or else checked once per distinct name by the builder), and after
 *   (2) above the builder's escaping is "every `&`, `<`, `>` in text, and also `"` in attribute values";
 * - anything outside that simple shape (namespace declarations below the root, an undeclared
 *   prefix, a name the builder refuses or reads specially) is replayed into xmlbuilder2 call for
 *   call, as this module always did, so the builder decides.
 *
 * A long flat document (a sitemap part: 50,000 `<url>` entries) is not recorded at all:
 * FlatXmlDocument writes each entry as it is added, the fast path's way, when the fast path would
 * take the document, so memory does not grow with it.
 *
 * test/render/xml-equivalence.test.ts holds both paths and the flat writer to the original
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
    const name = attrs[i]!;
    const value = attrs[i + 1]!;
    if (!builderTakesAttributeName(name)) {
      recording.simple = false;
    } else if (isNamespaceDeclaration(name)) {
      // The fast path knows declarations on the root only, of real namespaces, each once. The
      // builder drops a declaration of the XML namespace (and renames elements into it).
      const prefix = name === 'xmlns' ? '' : name.slice('xmlns:'.length);
      if (!isRoot || value === '' || value === XML_NAMESPACE || prefix === 'xml' || prefix === 'xmlns' || recording.prefixes.has(prefix)) {
        recording.simple = false;
      } else {
        recording.prefixes.add(prefix);
      }
    }
  }
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
  if (recording.simple) {
    let known = elementNames.get(name);
    if (known === undefined) {
      known = { ok: builderTakesElementName(name), prefix: prefixOf(name) };
      elementNames.set(name, known);
    }
    const { prefix } = known;
    if (!known.ok || (prefix !== null && (prefix === 'xml' || !recording.prefixes.has(prefix)))) {
      recording.simple = false;
    }
  }
}

/** Whether the fast path can write this DOCTYPE as it is (a quote in the system id goes the builder's way). */
function fastPathTakesDoctype(doctype: { systemId: string } | undefined): boolean {
  return doctype === undefined || !/["']/.test(doctype.systemId);
}

/** The attributes of an element that has none: shared, never written to. */
const NO_ATTRS: string[] = [];

/** One element under construction. */
export class XmlElement {
  /** @internal */
  constructor(
    private readonly node: ElementNode,
    private readonly recording: Recording,
  ) {}

  /** Appends a child element and returns it. Attributes that are null or undefined are left out. */
  el(name: string, attrs?: Attrs): XmlElement {
    const child = newElement(name, attrs, this.recording, false);
    this.node.children.push(child);
    return new XmlElement(child, this.recording);
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
 * Which way `end()` writes documents: 'fast' (the default) takes the fast path where it can;
 * 'builder' sends every document through xmlbuilder2, as before. For the equivalence tests and the
 * benchmark's before/after figures; the environment variable VIDFEEDS_XML_ENGINE=builder sets it too.
 */
let engine: XmlEngine = process.env.VIDFEEDS_XML_ENGINE === 'builder' ? 'builder' : 'fast';

export function setXmlEngine(next: XmlEngine): XmlEngine {
  const previous = engine;
  engine = next;
  return previous;
}

/** A document with its root element. `end()` serialises it. */
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
    this.root = new XmlElement(this.rootNode, this.recording);
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
    return `<?xml version="1.0" encoding="UTF-8"?>${doctype}${body}\n`;
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
    if (engine === 'fast' && recording.simple) this.start = `<?xml version="1.0" encoding="UTF-8"?>${startTag(root)}`;
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
