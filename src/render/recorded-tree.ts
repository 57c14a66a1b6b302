import { fastPathTakesAttribute, fastPathTakesElementName } from './xml-names.js';
import type { Attrs } from './xml-element.js';
import { numberText } from './number-text.js';
import { escapeAttr, escapeText, leafElement, sections, xmlChars } from './xml-text.js';

/**
 * A document recorded as a plain tree of the calls that made it (XmlDocument, FlatXmlDocument's
 * fallback): its nodes, whether the fast path can still write it (`Recording`), its values cleaned
 * in place, and the fast path's serialiser, which writes what xmlbuilder2's would for such a tree.
 */

export const TEXT = 0;
export const CDATA = 1;
export const ELEMENT = 2;
export const LEAF = 3;

export interface TextNode {
  readonly kind: typeof TEXT | typeof CDATA;
  /** As given until the document is cleaned (XmlDocument.fastBody); not escaped. */
  readonly text: string;
}

export interface ElementNode {
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
export interface LeafNode {
  readonly kind: typeof LEAF;
  readonly name: string;
  readonly attrs: string[];
  /** As given until the document is cleaned; not escaped. Empty: the element is empty. */
  readonly text: string;
}

/** What the document needs to know while it is recorded: whether the fast path can write it. */
export interface Recording {
  /** Namespace prefixes the root declares. */
  readonly prefixes: Set<string>;
  simple: boolean;
}

/**
 * Name, value, name, value... of the attributes that are there (not null or undefined), values as
 * text: as given (`raw`, see XmlDocument) or with forbidden characters removed.
 */
export function recordAttrs(attrs: Attrs, recording: Recording, isRoot: boolean, raw = true): string[] {
  const out: string[] = [];
  for (const name in attrs) {
    if (!Object.hasOwn(attrs, name)) continue;
    const value = attrs[name];
    if (value === null || value === undefined) continue;
    const text = typeof value === 'string' ? value : typeof value === 'number' ? numberText(value) : String(value);
    out.push(name, raw ? text : xmlChars(text));
  }
  checkAttrs(out, recording, isRoot);
  return out;
}

/** Whether the fast path can still write the document once it has these attributes (name, value, ...). */
export function checkAttrs(attrs: readonly string[], recording: Recording, isRoot: boolean): void {
  for (let i = 0; i < attrs.length && recording.simple; i += 2) {
    if (!fastPathTakesAttribute(attrs[i]!, attrs[i + 1]!, isRoot, recording.prefixes)) recording.simple = false;
  }
}

export function newElement(name: string, attrs: Attrs | undefined, recording: Recording, isRoot: boolean, raw = true): ElementNode {
  const node: ElementNode = { kind: ELEMENT, name, attrs: attrs === undefined ? NO_ATTRS : recordAttrs(attrs, recording, isRoot, raw), children: [] };
  checkElementName(name, recording);
  return node;
}

/** Whether the fast path can still write the document once it has an element of this name. */
export function checkElementName(name: string, recording: Recording): void {
  if (recording.simple && !fastPathTakesElementName(name, recording.prefixes)) recording.simple = false;
}

/** The attributes of an element that has none: shared, never written to. */
export const NO_ATTRS: string[] = [];

/**
 * Removes forbidden characters from the values of `node` and below, in place, as recording them
 * through xmlChars did (text that comes out empty is dropped, as `text` drops empty text), and
 * makes the fast path's checks again on the clean values, in document order (the root first, as
 * when they were recorded).
 */
export function cleanElement(node: ElementNode | LeafNode, recording: Recording, isRoot: boolean): void {
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

/** `<name attrs`, without the closing `>` or `/>`. */
export function startTag(node: ElementNode | LeafNode): string {
  let out = `<${node.name}`;
  const attrs = node.attrs;
  for (let i = 0; i < attrs.length; i += 2) out += ` ${attrs[i]}="${escapeAttr(attrs[i + 1]!)}"`;
  return out;
}

export function serializeLeaf(node: LeafNode): string {
  const start = startTag(node);
  return node.text === '' ? `${start}/>` : `${start}>${escapeText(node.text)}</${node.name}>`;
}

export function serialize(node: ElementNode): string {
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
