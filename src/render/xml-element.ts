/** An attribute's value: null and undefined leave the attribute out. */
export type AttrValue = string | number | null | undefined;
export type Attrs = Record<string, AttrValue>;

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
