import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseFragment } from 'parse5';
import { materialise, SCHEMAS } from './validators.js';

/**
 * Independent consumers for the oEmbed documents: Ajv (JSON Schema draft-07, with the `uri`
 * format checked by ajv-formats), Python's xml.etree (an XML parser that is not ours) and parse5
 * (the WHATWG HTML parsing algorithm, as browsers parse what a consumer pastes into its page).
 */

export const OEMBED_JSON_SCHEMA = join(SCHEMAS, 'oembed-1.0-response.schema.json');
export const OEMBED_RNC = join(SCHEMAS, 'oembed-1.0-response.rnc');

/** Validates JSON documents against the oEmbed 1.0 schema; returns the errors by document name. */
export function oembedJsonErrors(documents: Record<string, string>): Record<string, string> {
  // strictRequired would refuse the schema's `if`/`then` required lists, whose properties are
  // declared at the top level; every other strict check stays on.
  const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
  addFormats.default(ajv);
  const validate = ajv.compile(JSON.parse(readFileSync(OEMBED_JSON_SCHEMA, 'utf8')) as object);
  const errors: Record<string, string> = {};
  for (const [name, body] of Object.entries(documents)) {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch (error) {
      errors[name] = `not JSON: ${(error as Error).message}`;
      continue;
    }
    if (!validate(value)) errors[name] = ajv.errorsText(validate.errors);
  }
  return errors;
}

/**
 * Parses oEmbed XML documents with Python's xml.etree: each becomes its root's name and its
 * children as name → text, in order (an element with children of its own is reported as such).
 */
export function parseOembedXml(documents: Record<string, string>): Record<string, { root: string; fields: Array<[string, string]> }> {
  const { files, cleanup } = materialise(documents, '.xml');
  try {
    const script = `
import sys, json, xml.etree.ElementTree as ET
out = {}
for path in sys.argv[1:]:
    root = ET.parse(path).getroot()
    out[path] = {"root": root.tag,
                 "fields": [[c.tag, "<nested>" if len(c) else (c.text or "")] for c in root]}
print(json.dumps(out))
`;
    const result = spawnSync('/usr/bin/python3', ['-c', script, ...files], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    if (result.status !== 0) throw new Error(`python xml.etree failed: ${result.stderr}`);
    const parsed = JSON.parse(result.stdout) as Record<string, { root: string; fields: Array<[string, string]> }>;
    const names = Object.keys(documents);
    return Object.fromEntries(files.map((file, i) => [names[i]!, parsed[file]!]));
  } finally {
    cleanup();
  }
}

/** An HTML element as parse5 built it: its name, attributes (decoded) and child elements or text. */
export interface HtmlElement {
  tag: string;
  attrs: Record<string, string>;
  children: HtmlNode[];
}
export type HtmlNode = HtmlElement | { text: string };

interface Parse5Node {
  nodeName: string;
  tagName?: string;
  value?: string;
  attrs?: Array<{ name: string; value: string }>;
  childNodes?: Parse5Node[];
}

function simplify(node: Parse5Node): HtmlNode | null {
  if (node.nodeName === '#text') return { text: node.value ?? '' };
  if (node.tagName === undefined) return null; // comments
  const attrs: Record<string, string> = {};
  for (const { name, value } of node.attrs ?? []) attrs[name] = value;
  return { tag: node.tagName, attrs, children: (node.childNodes ?? []).map(simplify).filter((n): n is HtmlNode => n !== null) };
}

/** Parses markup as a page's `<body>` content would be parsed; returns the top-level nodes. */
export function parseHtml(html: string): HtmlNode[] {
  const fragment = parseFragment(html) as unknown as Parse5Node;
  return (fragment.childNodes ?? []).map(simplify).filter((n): n is HtmlNode => n !== null);
}

/**
 * Parses a whole HTML document (the `/oembed/html` form) as a browser would: its `lang`, its
 * title's text and the nodes of its body, white-space-only text left out.
 */
export function parseHtmlPage(html: string): { lang: string | undefined; title: string | undefined; body: HtmlNode[] } {
  const nodes = ((parse(html) as unknown as Parse5Node).childNodes ?? []).map(simplify);
  const htmlElement = nodes.filter((n): n is HtmlElement => n !== null && isElement(n)).find((e) => e.tag === 'html')!;
  const part = (tag: string) => htmlElement.children.filter(isElement).find((e) => e.tag === tag)!;
  const title = allElements([part('head')]).find((e) => e.tag === 'title');
  return {
    lang: htmlElement.attrs.lang,
    title: title === undefined ? undefined : title.children.map((c) => ('text' in c ? c.text : '')).join(''),
    body: part('body').children.filter((n) => isElement(n) || n.text.trim() !== ''),
  };
}

export function isElement(node: HtmlNode): node is HtmlElement {
  return 'tag' in node;
}

/** Every element in the tree, depth first. */
export function allElements(nodes: HtmlNode[]): HtmlElement[] {
  return nodes.filter(isElement).flatMap((el) => [el, ...allElements(el.children)]);
}

/** A `flashvars` value as the Flash player reads it: names in order, values URL-decoded. */
export function parseFlashvars(value: string): Array<[string, string]> {
  return value.split('&').map((pair) => {
    const at = pair.indexOf('=');
    if (at < 0) throw new Error(`flashvar without "=": ${pair}`);
    return [pair.slice(0, at), decodeURIComponent(pair.slice(at + 1))];
  });
}
