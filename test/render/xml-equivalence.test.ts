import { describe, expect, it } from 'vitest';
import { create } from 'xmlbuilder2';
import { FlatXmlDocument } from '../../src/render/flat-xml-document.js';
import { NS, xmlDocument, xmlDocuments } from '../../src/render/xml.js';
import { XmlDocument } from '../../src/render/xml-document.js';
import { type Attrs, type XmlElement } from '../../src/render/xml-element.js';
import { PLAIN_NAME, plainElementName } from '../../src/render/xml-names.js';
import { renderSitemaps, type SitemapEntry } from '../../src/formats/sitemap.js';
import { buildVideoElement, SITEMAP_VIDEO_NS } from '../../src/formats/sitemap-video.js';
import type { VideoView } from '../../src/model/views.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { FORMATS } from '../../src/formats/registry.js';
import * as reference from '../helpers/xml-reference.js';
import { HOSTILE } from '../../src/db/demo-data.js';
import { buildInMemory, createDemoDb, testConfig } from '../helpers/site-fixture.js';
import { xmllintWellFormed, xpath } from '../helpers/validators.js';

/**
 * src/render/xml.ts writes most documents without building xmlbuilder2's DOM (docs/performance.md).
 * These tests hold it to the original builder-only module (test/helpers/xml-reference.ts, kept
 * verbatim): same bytes for random documents over the whole API, hostile text and awkward names
 * and namespaces included, and for the whole demo site.
 */

/** The part of the API both modules share, so one program drives either. */
interface ElementApi {
  el(name: string, attrs?: Attrs): ElementApi;
  leaf(name: string, text: string | number, attrs?: Attrs): ElementApi;
  optionalLeaf(name: string, text: string | number | null | undefined, attrs?: Attrs): ElementApi;
  cdata(name: string, html: string): ElementApi;
  text(text: string): ElementApi;
}
type MakeDocument = (root: string, attrs?: Attrs, doctype?: { systemId: string }) => { root: ElementApi; end(): string };

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TEXTS = [
  ...Object.values(HOSTILE),
  '',
  ' ',
  'plain words',
  '&copy; &#65; &#x41; &amp; &lt;b&gt; &#; &; &a1; & alone &&',
  'line\nbreak\ttab\r\ncrlf',
  '"quoted" and \'single\'',
  ']]>',
  ']]]]>>',
  '\uD800 lone high, lone low \uDC00, pair \uD83C\uDFAC',
  '\uFFFE\uFFFF\u0000\u0001\u001F',
  'a'.repeat(3000),
];
const VALUES: Array<string | number | null | undefined> = [...TEXTS, 0, 42, -1.5, null, undefined];
const ELEMENT_NAMES = ['a', 'item', 'title', 'media:content', 'dc:creator', 'rdf:Description', 'foaf:name', 'x:undeclared', 'xml:lang-el', 'xmlns:no', 'p:q:r', 'a@urn:x', '1bad', 'bad name', 'ünïcode', 'é:x'];
const ATTR_NAMES = ['href', 'rel', 'type', 'xml:lang', 'rdf:about', 'rdf:resource', 'q:undeclared', 'xmlns', 'xmlns:media', 'xmlns:dc', 'xmlns:rdf', 'xmlns:foaf', 'xmlns:xml', 'xmlns:é', 'b@urn:y', 'bad attr', '1bad'];
const NAMESPACES = ['http://search.yahoo.com/mrss/', 'http://purl.org/dc/elements/1.1/', 'http://www.w3.org/1999/02/22-rdf-syntax-ns#', '', 'urn:x', 'http://www.w3.org/XML/1998/namespace'];

/** A random program over the API, as a function of the module that runs it. */
function randomProgram(seed: number): ((make: MakeDocument) => string) & { streamed?: () => string } {
  const random = prng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  // Mostly the shapes formats use (declarations on the root, declared prefixes), sometimes anything.
  const wild = random() < 0.3;
  // Half the programs make their documents in document order, as formats do (and can be streamed).
  const inOrder = random() < 0.5;
  const attrs = (isRoot: boolean): Attrs | undefined => {
    if (random() < 0.3) return undefined;
    const out: Attrs = {};
    const n = Math.floor(random() * 5);
    for (let i = 0; i < n; i++) {
      const name = wild ? pick(ATTR_NAMES) : pick(ATTR_NAMES.slice(0, 6));
      out[name] = name.startsWith('xmlns') ? pick(NAMESPACES) : pick(VALUES);
    }
    if (isRoot && !wild) {
      // Declarations in a random order among the other attributes.
      for (const [prefix, uri] of [['media', NAMESPACES[0]], ['dc', NAMESPACES[1]], ['rdf', NAMESPACES[2]], ['foaf', 'http://xmlns.com/foaf/0.1/']] as const) {
        if (random() < 0.93) out[`xmlns:${prefix}`] = uri;
      }
      if (random() < 0.4) out.xmlns = 'http://www.w3.org/2005/Atom';
    }
    return out;
  };
  const steps: Array<(element: ElementApi, open: ElementApi[]) => void> = [];
  const count = 1 + Math.floor(random() * 40);
  for (let i = 0; i < count; i++) {
    const op = random();
    const name = wild ? pick(ELEMENT_NAMES) : pick(ELEMENT_NAMES.slice(0, 7));
    const a = attrs(false);
    const text = pick(VALUES);
    const target = random();
    steps.push((root, open) => {
      // Append to any element made so far (formats go back to parents, e.g. after a nested leaf),
      // or, in document order, to one still open: those after it in `open` are closed then.
      const at = Math.floor(target * open.length);
      const element = open[at] ?? root;
      if (inOrder) open.length = at + 1;
      if (op < 0.3) open.push(element.el(name, a));
      else if (op < 0.55) element.leaf(name, text ?? '', a);
      else if (op < 0.7) element.optionalLeaf(name, text, a);
      else if (op < 0.8) element.cdata(name, String(text ?? ''));
      else element.text(String(text ?? ''));
    });
  }
  const rootName = wild ? pick(ELEMENT_NAMES) : pick(['rss', 'feed', 'rdf:RDF', 'urlset']);
  const rootAttrs = attrs(true);
  const doctype = random() < 0.1 ? { systemId: pick(['http://www.adobe.com/xml/dtds/cross-domain-policy.dtd', 'has"quote']) } : undefined;
  const write = (root: ElementApi) => {
    const open: ElementApi[] = [root];
    for (const step of steps) step(root, open);
  };
  const program = (make: MakeDocument) => {
    const doc = make(rootName, rootAttrs, doctype);
    write(doc.root);
    return doc.end();
  };
  // The same calls as xmlDocument takes them: a function of the root.
  program.streamed = () => xmlDocument(rootName, rootAttrs, write as (root: XmlElement) => void, { doctype });
  return program;
}

function outcome(run: () => string): string {
  try {
    return run();
  } catch (error) {
    return `threw: ${(error as Error).message.split('\n')[0]}`;
  }
}

const makeNew: MakeDocument = (root, attrs, doctype) => new XmlDocument(root, attrs, doctype);
/** The same module, every document through xmlbuilder2 (the 'builder' engine). */
const makeBuilder: MakeDocument = (root, attrs, doctype) => new XmlDocument(root, attrs, doctype, 'builder');
const makeReference: MakeDocument = (root, attrs, doctype) => new reference.XmlDocument(root, attrs, doctype);

describe('src/render/xml.ts is byte-identical to the builder-only original', () => {
  it('for 2000 random documents, streamed when they can be, recorded when they cannot', () => {
    const before = { ...xmlDocuments };
    let threw = 0;
    for (let seed = 1; seed <= 2000; seed++) {
      const program = randomProgram(seed);
      const expected = outcome(() => program(makeReference));
      const actual = outcome(program.streamed!);
      if (expected.startsWith('threw:')) {
        expect(actual.startsWith('threw:'), `seed ${seed}: reference ${expected}`).toBe(true);
        threw++;
        continue;
      }
      expect(actual, `seed ${seed}`).toBe(expected);
    }
    // Most programs append in document order and stream; some go back to a closed element or use
    // a name only the builder judges, and are recorded; some fail in either module.
    const streamed = xmlDocuments.streamed - before.streamed;
    const recorded = xmlDocuments.recorded - before.recorded;
    expect(streamed).toBeGreaterThan(300);
    expect(recorded).toBeGreaterThan(400);
    expect(threw).toBeGreaterThan(50);
    expect(streamed + recorded).toBe(2000);
  });

  it('streams every document our formats make (the demo site, hostile values included)', () => {
    const f = createDemoDb({ users: 24, seed: 5 });
    const before = { ...xmlDocuments };
    const { report } = buildInMemory(f.file);
    expect(report.failedCount).toBe(0);
    expect(xmlDocuments.streamed - before.streamed).toBeGreaterThan(200);
    expect(xmlDocuments.recorded - before.recorded).toBe(0);
  });

  it('takes a document out of order, or with a name only the builder judges, by recording it', () => {
    const programs: Array<(root: ElementApi) => void> = [
      (root) => {
        const channel = root.el('channel');
        const item = channel.el('item');
        channel.leaf('title', 'after the item');
        // The item was closed by the channel's title: only a recorded document can take this.
        item.leaf('title', 'inside the item');
      },
      (root) => void root.el('b', { 'xmlns:x': 'urn:x' }).leaf('x:c', 'text'),
      (root) => void root.leaf('x:undeclared', 'a prefix the root does not declare'),
    ];
    for (const write of programs) {
      const reference = makeReference('rss');
      write(reference.root);
      const before = xmlDocuments.recorded;
      expect(xmlDocument('rss', undefined, write as (root: XmlElement) => void)).toBe(reference.end());
      expect(xmlDocuments.recorded - before).toBe(1);
    }
  });
});

describe('XmlDocument (a recorded document) is byte-identical to the builder-only original', () => {
  it('for 2000 random documents, on the fast path and on the builder path', () => {
    let fast = 0;
    let threw = 0;
    for (let seed = 1; seed <= 2000; seed++) {
      const program = randomProgram(seed);
      const expected = outcome(() => program(makeReference));
      let tookFastPath = false;
      const actual = outcome(() =>
        program((root, attrs, doctype) => {
          const doc = new XmlDocument(root, attrs, doctype);
          return { root: doc.root, end: () => ((tookFastPath = doc.takesFastPath), doc.end()) };
        }),
      );
      // Errors may be raised at another call (the builder path meets a bad name at `end()`), but
      // a program fails in one module exactly when it fails in the other.
      if (expected.startsWith('threw:')) {
        expect(actual.startsWith('threw:'), `seed ${seed}: reference ${expected}`).toBe(true);
        threw++;
        continue;
      }
      expect(actual, `seed ${seed}`).toBe(expected);
      if (tookFastPath) fast++;
      expect(outcome(() => program(makeBuilder)), `seed ${seed}, builder engine`).toBe(expected);
    }
    // The fast path, the builder path and failures were each exercised often.
    expect(fast).toBeGreaterThan(600);
    expect(threw).toBeGreaterThan(50);
    expect(2000 - fast - threw).toBeGreaterThan(100);
  });

  it('declarations of the XML namespace, which the builder drops, go the builder\'s way', () => {
    const xmlNs = 'http://www.w3.org/XML/1998/namespace';
    for (const attrs of [{ xmlns: xmlNs }, { 'xmlns:p': xmlNs }, { 'xmlns:media': NAMESPACES[0], xmlns: xmlNs }]) {
      for (const child of [null, 'b']) {
        const program = (make: MakeDocument) => {
          const doc = make('a', attrs);
          if (child !== null) doc.root.el(child);
          return doc.end();
        };
        expect(program(makeNew), JSON.stringify({ attrs, child })).toBe(program(makeReference));
      }
    }
  });

  it('for every document of the demo site', () => {
    const f = createDemoDb({ users: 30, seed: 3 });
    const fast = buildInMemory(f.file).writer.files;
    const builder = buildInMemory(f.file, { xmlEngine: 'builder' }).writer.files;
    expect(fast.size).toBeGreaterThan(50);
    expect([...fast.keys()]).toEqual([...builder.keys()]);
    for (const [path, body] of fast) expect(body.equals(builder.get(path)!), path).toBe(true);
  });
});

/** URL-shaped text with everything a URL from a configured page template or a bad row might hold. */
function hostileUrl(random: () => number): string {
  const pieces = [
    'https://videos.example.org/',
    'user/rss/',
    '?q=a&b=c',
    '&',
    '&amp;',
    '&copy;',
    '&#65;',
    '&#x41;',
    '&lt;',
    '<',
    '>',
    '"',
    "'",
    ']]>',
    '\u0000',
    '\u0007',
    '\u001F',
    '\u007F',
    '\u0085',
    '\uFFFE',
    '\uFFFF',
    '\uD800',
    '\uDC00',
    '\uD83C\uDFAC',
    '𝕏',
    '\r\n',
    '\r',
    '\t',
    ' ',
    'é',
    '\u202E',
    ...Object.values(HOSTILE),
  ];
  let url = '';
  const n = Math.floor(random() * 8);
  for (let i = 0; i < n; i++) url += pieces[Math.floor(random() * pieces.length)];
  return url;
}

describe('FlatXmlDocument writes what a tree of the same calls writes', () => {
  it('for 1000 random documents of hostile entries, on either engine, with names the fast path takes or not', () => {
    let flat = 0;
    let fallback = 0;
    let threw = 0;
    for (let seed = 1; seed <= 1000; seed++) {
      const random = prng(seed);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
      const wild = random() < 0.25;
      const rootName = wild ? pick(ELEMENT_NAMES) : pick(['urlset', 'sitemapindex']);
      const rootAttrs: Attrs | undefined = wild ? { [pick(ATTR_NAMES)]: pick(NAMESPACES), ...(random() < 0.5 ? { 'xmlns:media': NAMESPACES[0] } : {}) } : { xmlns: NS.sitemap };
      const entryName = wild ? pick(ELEMENT_NAMES) : pick(['url', 'sitemap']);
      const leafNames = wild ? ELEMENT_NAMES.filter(() => random() < 0.15) : random() < 0.8 ? ['loc'] : ['loc', 'lastmod', 'priority'].slice(0, Math.floor(random() * 4));
      const entries = random() < 0.1 ? [] : [...Array(Math.floor(random() * 30)).keys()].map(() => leafNames.map(() => (random() < 0.1 ? pick([0, 42, -1.5]) : hostileUrl(random))));

      const tree = (make: MakeDocument) => () => {
        const doc = make(rootName, rootAttrs);
        for (const texts of entries) {
          const entry = doc.root.el(entryName);
          texts.forEach((text, i) => entry.leaf(leafNames[i]!, text));
        }
        return doc.end();
      };
      const expected = outcome(tree(makeReference));
      for (const engine of ['fast', 'builder'] as const) {
        let tookFastPath = false;
        const actual = outcome(() => {
          const doc = new FlatXmlDocument(rootName, rootAttrs, entryName, leafNames, engine);
          tookFastPath = doc.takesFastPath;
          for (const texts of entries) doc.entry(...texts);
          expect(doc.length).toBe(entries.length);
          return doc.end();
        });
        if (expected.startsWith('threw:')) {
          expect(actual.startsWith('threw:'), `seed ${seed}, ${engine}: reference ${expected}`).toBe(true);
          if (engine === 'fast') threw++;
          continue;
        }
        expect(actual, `seed ${seed}, ${engine}`).toBe(expected);
        // The tree path of this module agrees too (the reference is the builder alone).
        expect(outcome(tree(engine === 'fast' ? makeNew : makeBuilder)), `seed ${seed}, ${engine}, tree`).toBe(expected);
        if (engine === 'fast') {
          if (tookFastPath) flat++;
          else fallback++;
        } else {
          expect(tookFastPath).toBe(false);
        }
      }
    }
    expect(flat).toBeGreaterThan(600);
    expect(fallback).toBeGreaterThan(20);
    expect(threw).toBeGreaterThan(20);
  });

  it('a sitemap of hostile URLs, split into parts and an index, is what the builder alone writes', () => {
    const site = createSiteContext(testConfig(), FORMATS, new Date(Date.UTC(2026, 0, 1)));
    const random = prng(99);
    const urls = [...Array(2_000).keys()].map(() => hostileUrl(random));
    const files = [...renderSitemaps(urls, site, 700)];
    expect(files.map((f) => f.file)).toEqual(['sitemap-1.xml', 'sitemap-2.xml', 'sitemap-3.xml', 'sitemap.xml']);
    const urlset = (part: string[]) => {
      const doc = new reference.XmlDocument('urlset', { xmlns: NS.sitemap, 'xmlns:video': SITEMAP_VIDEO_NS });
      for (const url of part) doc.root.el('url').leaf('loc', url);
      return doc.end();
    };
    for (let i = 0; i < 3; i++) expect(files[i]!.body, files[i]!.file).toBe(urlset(urls.slice(i * 700, (i + 1) * 700)));
    const index = new reference.XmlDocument('sitemapindex', { xmlns: NS.sitemap });
    for (const part of files.slice(0, 3)) index.root.el('sitemap').leaf('loc', site.paths.siteUrl(part.file));
    expect(files[3]!.body).toBe(index.end());
    expect(xmllintWellFormed(Object.fromEntries(files.map((f) => [f.file, f.body]))).output).toBe('');
  });

  it('video entries of hostile text, nested in their url, are what the builder alone writes', () => {
    const site = createSiteContext(testConfig(), FORMATS, new Date(Date.UTC(2026, 0, 1)));
    const random = prng(7);
    const hostile = Object.values(HOSTILE);
    const pick = () => hostile[Math.floor(random() * hostile.length)]!;
    const entries: SitemapEntry[] = [...Array(300).keys()].map((i) => ({
      loc: hostileUrl(random),
      lastmod: '2026-01-01T00:00:00Z',
      video: videoOf(i, `${pick()} ${pick()}`, `${pick()}${pick()}`, `${pick()}`),
    }));
    const files = [...renderSitemaps(entries, site, 120)];
    expect(files.map((f) => f.file)).toEqual(['sitemap-1.xml', 'sitemap-2.xml', 'sitemap-3.xml', 'sitemap.xml']);
    for (let i = 0; i < 3; i++) {
      const doc = new reference.XmlDocument('urlset', { xmlns: NS.sitemap, 'xmlns:video': SITEMAP_VIDEO_NS });
      for (const entry of entries.slice(i * 120, (i + 1) * 120)) {
        const url = doc.root.el('url').leaf('loc', entry.loc).leaf('lastmod', entry.lastmod!);
        buildVideoElement(url.el('video:video') as unknown as XmlElement, { ...entry, video: entry.video! }, site);
      }
      expect(files[i]!.body, files[i]!.file).toBe(doc.end());
    }
    expect(xmllintWellFormed(Object.fromEntries(files.map((f) => [f.file, f.body]))).output).toBe('');
  });
});

function videoOf(id: number, title: string, description: string, uploader: string): VideoView {
  return {
    id,
    publicId: `v${id}`,
    title,
    description,
    durationSeconds: id % 3 === 0 ? null : id * 97,
    fileUrl: `https://cdn.example.org/v/${id}.mp4?a=1&b=<2>`,
    fileSize: null,
    fileType: 'video/mp4',
    width: null,
    height: null,
    thumbnailUrl: `https://cdn.example.org/t/${id}.jpg?q="x"`,
    thumbnailWidth: 160,
    thumbnailHeight: 120,
    captionsUrl: null,
    category: null,
    tags: [],
    uploader: { username: `u${id}`, displayName: uploader, avatarUrl: null, homepageUrl: null, emailSha1: null },
    createdAt: new Date(Date.UTC(2025, 0, 1 + id)),
    updatedAt: new Date(Date.UTC(2025, 0, 1 + id)),
  };
}

describe('text comes back as it went in', () => {
  it('escapes entity-shaped ampersands (the xmlbuilder2 quirk), markup and quotes; drops forbidden characters', () => {
    const tricky = '&copy; &#65; &#x41; &amp; &lt;b&gt; & alone <script>"q" \'s\' ]]>';
    const doc = new XmlDocument('root');
    doc.root.leaf('t', `${tricky}\u0000\uFFFE\uD800`, { a: tricky });
    doc.root.cdata('c', tricky);
    const body = doc.end();
    expect(doc.takesFastPath).toBe(true);
    expect(xmllintWellFormed({ body }).output).toBe('');
    expect(xpath(body, 'string(/root/t)')).toBe(tricky);
    expect(xpath(body, 'string(/root/t/@a)')).toBe(tricky);
    expect(xpath(body, 'string(/root/c)')).toBe(tricky);
  });
});

function accepts(attempt: () => unknown): boolean {
  try {
    attempt();
    return true;
  } catch {
    return false;
  }
}

describe('names the fast path takes without asking xmlbuilder2', () => {
  it('are names the builder takes, as elements and as attributes, on 30,000 generated names', () => {
    const random = prng(17);
    // Characters that make names the builder refuses or reads specially: digits and dots first,
    // colons, the xml and xmlns prefixes, non-ASCII letters, '@' (a namespace to the builder).
    const pieces = ['a', 'Z', '_', '-', '.', '1', ':', 'xml', 'xmlns', 'XML', 'é', '@', ' ', 'x'];
    let plain = 0;
    for (let i = 0; i < 30_000; i++) {
      let name = '';
      const length = 1 + Math.floor(random() * 6);
      for (let j = 0; j < length; j++) name += pieces[Math.floor(random() * pieces.length)];
      if (PLAIN_NAME.test(name)) {
        plain++;
        expect(accepts(() => create().ele('check').att(name, 'urn:vidfeeds:value-check')), `attribute ${name}`).toBe(true);
      }
      if (plainElementName(name)) expect(accepts(() => create().ele('urn:vidfeeds:name-check', name)), `element ${name}`).toBe(true);
    }
    // The generator reaches both sides of the pattern.
    expect(plain).toBeGreaterThan(3_000);
    expect(plain).toBeLessThan(27_000);
  });

  it('leave the names the builder refuses or reads specially to it', () => {
    for (const name of ['xmlns', 'xmlns:media', 'xml:lang', '1a', 'a:1b', 'a:b:c', 'é', 'a b', 'a@urn:x', '']) expect(plainElementName(name), name).toBe(false);
    for (const name of ['xmlns', 'xmlns:media', 'xml:lang', 'rss', 'media:content', 'xmlUrl', 'a.b-c_d']) expect(PLAIN_NAME.test(name), name).toBe(true);
  });
});
