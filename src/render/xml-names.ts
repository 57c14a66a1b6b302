import { createXmlBuilder } from './xmlbuilder-loader.js';

/**
 * Which element and attribute names the fast path (streamed or recorded, src/render/xml.ts) writes
 * as xmlbuilder2 would: plain names are taken as they are, and the builder decides the others,
 * once per distinct name. Namespace declarations only on the root, each prefix once.
 */

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
    ok = plainElementName(name) || (!name.includes('@') && accepts(() => createXmlBuilder().ele('urn:vidfeeds:name-check', name)));
    elementNameOk.set(name, ok);
  }
  return ok;
}

function builderTakesAttributeName(name: string): boolean {
  let ok = attributeNameOk.get(name);
  if (ok === undefined) {
    ok = PLAIN_NAME.test(name) || (!name.includes('@') && accepts(() => createXmlBuilder().ele('check').att(name, 'urn:vidfeeds:value-check')));
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

export function isNamespaceDeclaration(name: string): boolean {
  return name === 'xmlns' || name.startsWith('xmlns:');
}

/**
 * Whether the fast path (streamed or recorded) writes this attribute, its value clean, as the
 * builder would: a name the builder takes as it is; a namespace declaration only on the root, of a
 * real namespace, each prefix once (added to `prefixes`). The builder drops a declaration of the
 * XML namespace (and renames elements into it).
 */
export function fastPathTakesAttribute(name: string, value: string, isRoot: boolean, prefixes: Set<string>): boolean {
  if (!builderTakesAttributeName(name)) return false;
  if (!isNamespaceDeclaration(name)) return true;
  const prefix = name === 'xmlns' ? '' : name.slice('xmlns:'.length);
  if (!isRoot || value === '' || value === XML_NAMESPACE || prefix === 'xml' || prefix === 'xmlns' || prefixes.has(prefix)) return false;
  prefixes.add(prefix);
  return true;
}

/** Per element name: whether the builder takes it as it is, and its prefix (looked up once per name). */
const elementNames = new Map<string, { ok: boolean; prefix: string | null }>();

/** Whether the fast path writes an element of this name: one the builder takes as it is, its prefix (if any) declared on the root. */
export function fastPathTakesElementName(name: string, prefixes: ReadonlySet<string>): boolean {
  let known = elementNames.get(name);
  if (known === undefined) {
    known = { ok: builderTakesElementName(name), prefix: prefixOf(name) };
    elementNames.set(name, known);
  }
  const { prefix } = known;
  return known.ok && (prefix === null || (prefix !== 'xml' && prefixes.has(prefix)));
}

/** Whether the fast path can write this DOCTYPE as it is (a quote in the system id goes the builder's way). */
export function fastPathTakesDoctype(doctype: { systemId: string } | undefined): boolean {
  return doctype === undefined || !/["']/.test(doctype.systemId);
}

/** What an attribute name is to the stream: anything but a plain one (taken as it is, no declaration) is checked in full. */
export const PLAIN_ATTRIBUTE = 0;
const OTHER_ATTRIBUTE = 1;
const attributeNameKinds = new Map<string, number>();

export function attributeNameKind(name: string): number {
  let kind = attributeNameKinds.get(name);
  if (kind === undefined) {
    kind = builderTakesAttributeName(name) && !isNamespaceDeclaration(name) ? PLAIN_ATTRIBUTE : OTHER_ATTRIBUTE;
    attributeNameKinds.set(name, kind);
  }
  return kind;
}
