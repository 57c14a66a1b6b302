/**
 * XML text as every way of writing a document needs it (src/render/xml.ts): the characters XML 1.0
 * forbids removed, CDATA sections, and the escaping xmlbuilder2's serialiser does, for text and for
 * attribute values. Also what a format that writes its own markup uses (rss.ts: xmlAttr, xmlLeaf).
 */

/** What every document starts with. */
export const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';

// Everything outside XML 1.0's Char production. With the u flag a lone surrogate is one code point.
const FORBIDDEN = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;
// A quick test without the u flag: also true for every surrogate (valid pairs included) and for CR;
// then the exact replacements below decide. Most text is plain and skips them altogether. Written
// as the characters it finds, not as the complement of those it lets through
// ([^\t\n\u0020-\uD7FF\uE000-\uFFFD], the same set of UTF-16 units): V8 scans for it twice as fast.
export const MAYBE_FORBIDDEN = /[\u0000-\u0008\u000B-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;
const ENTITY_SHAPED_AMPERSAND = /&(?=[A-Za-z]+;|#\d+;)/g;

/**
 * Text as XML 1.0 can carry it: forbidden characters removed, and line ends as every XML parser
 * reports them (CR LF and a lone CR become LF, XML 1.0 section 2.11), so a value reads back exactly
 * as we hold it, and equals the same value in a JSON form.
 */
export function xmlChars(text: string): string {
  return MAYBE_FORBIDDEN.test(text) ? text.replace(FORBIDDEN, '').replace(/\r\n?/g, '\n') : text;
}

/** Whether a text is blank once the characters XML cannot carry are removed (a title of U+0007). */
export function blank(text: string): boolean {
  return xmlChars(text).trim() === '';
}

/**
 * What names a person in a document: the display name, or the username where the display name is
 * blank (U+0007, spaces), which would leave the person nameless ("FOAF profile of ").
 */
export function personName(person: { displayName: string; username: string }): string {
  return blank(person.displayName) ? person.username : person.displayName;
}

/**
 * What names a video where a page needs a name (the embed page's title and link, the head
 * snippet's titles and JSON-LD `name`, the oEmbed iframe's `title`): the title, or the video's id
 * where the title is blank (white space, or characters XML cannot carry such as U+0007).
 */
export function videoName(video: { title: string; publicId: string }): string {
  return blank(video.title) ? video.publicId : video.title;
}

/**
 * `text` as one flat string. V8 keeps a concatenation as a tree of its pieces until something
 * reads it; a piece kept and copied into many documents (an uploader's or a tag list's markup) is
 * walked again inside each document's tree when that document is encoded, unless flattened once.
 * Reading a character flattens a concatenation in place, and the character is stored where the
 * optimizing compiler cannot prove it unused: a read whose result goes nowhere is dropped once the
 * caller is optimized, and the tree stays (as it does after an unused `Number(text)`).
 */
export function flat(text: string): string {
  reads ^= text.charCodeAt(0);
  return text;
}

/** The characters `flat` read, folded together; kept only so that the reads happen. */
let reads = 0;

/** Text ready for the builder's `txt` or `att` (the builder path only). */
export function forBuilder(text: string): string {
  return text.replace(ENTITY_SHAPED_AMPERSAND, '&amp;');
}

/** CDATA sections for `text`: one section cannot hold `]]>`, so it is split across two. */
export function cdataSections(text: string): string[] {
  return sections(xmlChars(text));
}

/** CDATA sections for text already clean (see cdataSections). */
export function sections(clean: string): string[] {
  if (!clean.includes(']]>')) return [clean];
  return clean
    .split(']]>')
    .map((part, i, all) => (i > 0 ? '>' : '') + part + (i < all.length - 1 ? ']]' : ''));
}

const TEXT_SPECIAL = /[&<>]/;
const ATTR_SPECIAL = /[&<>"]/;
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };
const escapeChar = (c: string) => ESCAPES[c]!;

export function escapeText(text: string): string {
  return TEXT_SPECIAL.test(text) ? text.replace(/[&<>]/g, escapeChar) : text;
}

export function escapeAttr(value: string): string {
  return ATTR_SPECIAL.test(value) ? value.replace(/[&<>"]/g, escapeChar) : value;
}

// One test per value for both things that can change it: characters to escape, and characters
// xmlChars would change (the quick test of MAYBE_FORBIDDEN). Most values hold neither.
const TEXT_MAY_CHANGE = /[&<>\u0000-\u0008\u000B-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;
const ATTR_MAY_CHANGE = /[&<>"\u0000-\u0008\u000B-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;

/** Text content as the stream writes it: cleaned (xmlChars) and escaped. */
export function xmlText(text: string): string {
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
export function xmlCdata(name: string, html: string): string {
  let out = `<${name}>`;
  // The builder writes nothing for an empty section, yet the element is not empty: `<c></c>`.
  for (const section of cdataSections(html)) if (section !== '') out += `<![CDATA[${section}]]>`;
  return `${out}</${name}>`;
}

/** `<name>text</name>`, or `<name/>` when the text is empty: a leaf as `serialize` writes it. */
export function leafElement(name: string, text: string): string {
  return text === '' ? `<${name}/>` : `<${name}>${escapeText(text)}</${name}>`;
}

/**
 * Text for an element readers take as HTML, written so that it reads the same as plain text
 * wherever it can: a `<` is escaped (it could open a tag), and an `&` only where it could start a
 * character reference (`AT&T`, `&copy`), so `Q & A` and `Bob's` stay as they are. What a name
 * holds then shows as written in a reader that renders HTML, and never becomes markup.
 */
export function htmlText(text: string): string {
  return /<|&[A-Za-z0-9#]/.test(text) ? text.replace(/<|&(?=[A-Za-z0-9#])/g, (c) => (c === '<' ? '&lt;' : '&amp;')) : text;
}
