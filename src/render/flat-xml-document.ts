import { cleanElement, newElement, serialize, startTag, type Recording } from './recorded-tree.js';
import { RecordedElement, XmlDocument } from './xml-document.js';
import type { Attrs, XmlElement } from './xml-element.js';
import type { XmlEngine } from './xml-engine.js';
import { numberText } from './number-text.js';
import { leafElement, MAYBE_FORBIDDEN, xmlChars, XML_DECLARATION } from './xml-text.js';

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

/** An element an entry holds after its leaves, filled through the tree API (a sitemap's `<video:video>`). */
export interface EntryChild {
  name: string;
  build: (element: XmlElement) => void;
}
export class FlatXmlDocument {
  private readonly tree: XmlDocument | null = null;
  /** The namespace prefixes the root declares: a nested child may use them. */
  private readonly prefixes = new Set<string>();
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
    engine: XmlEngine = 'fast',
  ) {
    const recording: Recording = { prefixes: this.prefixes, simple: true };
    const root = newElement(rootName, attrs, recording, true, false);
    // Only the checks matter here: the root has declared its prefixes by now, as in a tree.
    for (const name of [entryName, ...leafNames]) newElement(name, undefined, recording, false);
    if (engine === 'fast' && recording.simple) this.start = `${XML_DECLARATION}${startTag(root)}`;
    else this.tree = new XmlDocument(rootName, attrs, undefined, engine);
  }

  /** Appends one entry holding one leaf per leaf name, with these texts, in order. */
  entry(...texts: Array<string | number>): this {
    return this.entryWith(texts);
  }

  /**
   * Appends one entry holding its leaves (as `entry`) and then, when `child` is given, one element
   * of that name that `child.build` fills through the tree API (a sitemap's `<video:video>`). The
   * child is recorded and written as XmlDocument writes an element: its names must be ones the
   * fast path takes (prefixes the root declares), which is the caller's to hold.
   */
  entryWith(texts: ReadonlyArray<string | number>, child?: EntryChild): this {
    const names = this.leafNames;
    this.checkTexts(texts);
    this.entries++;
    if (this.tree !== null) {
      const element = this.tree.root.el(this.entryName);
      for (let i = 0; i < names.length; i++) element.leaf(names[i]!, texts[i]!);
      if (child !== undefined) child.build(element.el(child.name));
      return this;
    }
    this.pending.push(this.entryMarkup(texts, child));
    if (this.pending.length === FLAT_CHUNK_ENTRIES) {
      this.chunks.push(this.pending.join(''));
      this.pending = [];
    }
    return this;
  }

  /**
   * One entry's markup as `entryWith` appends it, without appending it: a caller that keeps
   * entries between documents (a sitemap part spliced from the owners' entries it was made of)
   * joins them with `around`. Only on the fast path (`takesFastPath`).
   */
  markup(texts: ReadonlyArray<string | number>, child?: EntryChild): string {
    if (this.tree !== null) throw new Error(`<${this.rootName}> is not written on the fast path: its entries have no markup of their own`);
    this.checkTexts(texts);
    return this.entryMarkup(texts, child);
  }

  private checkTexts(texts: ReadonlyArray<string | number>): void {
    if (texts.length !== this.leafNames.length) throw new Error(`<${this.entryName}> takes ${this.leafNames.length} texts, got ${texts.length}`);
  }

  /** The document holding these entries' markup (from `markup`), as `end()` writes it. */
  around(entries: readonly string[]): string {
    if (entries.length === 0) return `${this.opening().slice(0, -1)}/>\n`;
    return [this.opening(), ...entries, `</${this.rootName}>\n`].join('');
  }

  /** What comes before the first entry's markup in a document that has entries (`around`). */
  opening(): string {
    if (this.tree !== null) throw new Error(`<${this.rootName}> is not written on the fast path`);
    return `${this.start}>`;
  }

  private entryMarkup(texts: ReadonlyArray<string | number>, child?: EntryChild): string {
    const names = this.leafNames;
    if (names.length === 0 && child === undefined) return `<${this.entryName}/>`;
    let out = `<${this.entryName}>`;
    for (let i = 0; i < names.length; i++) {
      const text = texts[i]!;
      out += leafElement(names[i]!, xmlChars(typeof text === 'string' ? text : numberText(text)));
    }
    if (child !== undefined) out += this.childMarkup(child.name, child.build);
    return `${out}</${this.entryName}>`;
  }

  /** A nested child as the fast path writes it: recorded, cleaned only where it must be (as XmlDocument does), serialised. */
  private childMarkup(name: string, build: (element: XmlElement) => void): string {
    const recording: Recording = { prefixes: this.prefixes, simple: true };
    const node = newElement(name, undefined, recording, false);
    build(new RecordedElement(node, recording));
    let markup = serialize(node);
    if (MAYBE_FORBIDDEN.test(markup)) {
      cleanElement(node, recording, false);
      markup = serialize(node);
    }
    if (!recording.simple) throw new Error(`<${name}> holds a name the root does not declare a prefix for`);
    return markup;
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
