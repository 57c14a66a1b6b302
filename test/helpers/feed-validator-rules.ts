import { XmlDocument, type XmlElement, type XmlNode } from 'libxml2-wasm';
import { parseFragment } from 'parse5';
import { APPLE_PODCAST_CATEGORIES, W3C_VALIDATOR_LACKS } from './apple-podcast-categories.js';

/**
 * The checks the W3C feed validator (github.com/w3c/feedvalidator) makes of an RSS 2.0 podcast
 * feed's channel and items, the iTunes tags and the elements vidfeeds writes beside them, written
 * here from what each check requires, since the validator itself (Python, on no registry this
 * project reaches) cannot run in the tests. The document is read by libxml2 (libxml2-wasm), not by
 * anything of vidfeeds's renderer.
 *
 * `error` is what the validator counts as an error (the feed is "not valid"), `warning` what it
 * recommends. Left out: its warning on every feed declaring the Podcasting 2.0 namespace (it
 * names the namespace as one it does not check), which no feed with `podcast:` tags avoids, and
 * its check of CSS in `style` attributes (any `style` is reported here).
 */

export interface RuleFinding {
  level: 'error' | 'warning';
  /** What is wrong, in a few words. */
  rule: string;
  /** Where: `channel`, `item 3`, with the element. */
  where: string;
  value?: string;
}

const NS = {
  itunes: 'http://www.itunes.com/dtds/podcast-1.0.dtd',
  atom: 'http://www.w3.org/2005/Atom',
  media: 'http://search.yahoo.com/mrss/',
};

/** The extensions of enclosures Apple Podcasts plays (the validator warns about any other). */
export const ITUNES_ENCLOSURE_EXTENSIONS = ['m4a', 'mp3', 'mov', 'mp4', 'm4v', 'pdf', 'epub'];

/** The validator's test of an http(s) URL: a dotted host name or an IPv4 address, then only RFC 2396 characters. */
const HTTP_URL = /^https?:\/\/(?:(?:\d{1,3}\.){3}|(?:[a-z0-9-]+\.)+)[a-z0-9][-a-z0-9]*(?::\d+)?(?:\/|$)/i;
const FULL_URI = /^[a-z][0-9a-z+.-]*:(?:\/\/)?[0-9a-z;/?:@&=+$._!~*'()%,#-]+$/i;
const MIME = /^[^\s()<>,;:\\"/[\]?=]+\/[^\s()<>,;:\\"/[\]?=]+(?:\s*;\s*[^\s()<>,;:\\"/[\]?=]+=(?:"(?:\\"|[^"])*"|[^\s()<>,;:\\"/[\]?=]+))*$/;
/** RFC 822 as RFC 2822 writes it: optional weekday, day, month, four-digit year, time, zone. */
const RFC2822 = /^(?:(Mon|Tue|Wed|Thu|Fri|Sat|Sun), )?(\d\d?) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) (\d{4}) (\d\d):(\d\d)(?::(\d\d))? ([+-]?\d\d[03]0|UT|GMT|EST|EDT|CST|CDT|MST|MDT|PST|PDT|Z)$/;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const DURATION = /^\d+(?::[0-5]\d(?::[0-5]\d)?)?$/;
/** An address as the validator accepts it without looking its domain up. */
const EMAIL = /^[a-z0-9_\-+.']+@(?:(?:\d{1,3}\.){3}|(?:[a-z0-9-]+\.)+)[a-z0-9][-a-z0-9]*$/i;
/** Markup a text-only element should not hold: an HTML end tag or a character reference. */
const LOOKS_LIKE_HTML = /<\/[a-z][a-z0-9]*>|&#?\w+;/i;

/** HTML elements the validator names as risky in a description (scripts, frames, plug-ins, document parts). */
const RISKY_HTML = ['applet', 'base', 'basefont', 'body', 'comment', 'embed', 'frame', 'frameset', 'head', 'html', 'iframe', 'isindex', 'link', 'listing', 'meta', 'noframes', 'object', 'param', 'plaintext', 'script', 'slot', 'style', 'title', 'xmp'];

/** The atom:link relations the validator knows (IANA's, RFC 5005's, WebSub's hub); others must be URIs. */
const REGISTERED_RELS = ['alternate', 'current', 'describedby', 'edit', 'edit-media', 'enclosure', 'first', 'hub', 'last', 'license', 'next', 'next-archive', 'payment', 'prev-archive', 'previous', 'related', 'replies', 'search', 'self', 'service', 'up', 'via'];

/** Elements that may appear once in a channel or an item. */
const ONCE_IN_CHANNEL = ['title', 'link', 'description', 'language', 'copyright', 'pubDate', 'lastBuildDate', 'generator', 'image', 'ttl', 'docs'];
const ONCE_ITUNES_CHANNEL = ['author', 'owner', 'image', 'explicit', 'type', 'block', 'summary', 'subtitle', 'keywords', 'new-feed-url'];
const ONCE_IN_ITEM = ['title', 'link', 'description', 'guid', 'pubDate', 'source', 'comments'];
const ONCE_ITUNES_ITEM = ['duration', 'image', 'episodeType', 'explicit', 'title', 'episode', 'season', 'author', 'block', 'summary', 'subtitle', 'keywords'];

class Findings {
  readonly list: RuleFinding[] = [];
  error(rule: string, where: string, value?: string): void {
    this.list.push({ level: 'error', rule, where, ...(value === undefined ? {} : { value }) });
  }
  warning(rule: string, where: string, value?: string): void {
    this.list.push({ level: 'warning', rule, where, ...(value === undefined ? {} : { value }) });
  }
}

function children(parent: XmlNode, name: string): XmlElement[] {
  return parent.find(name, NS) as XmlElement[];
}

function text(parent: XmlNode, name: string): string | null {
  const found = children(parent, name);
  return found.length === 0 ? null : found[0]!.content;
}

function attr(element: XmlElement, name: string): string | null {
  return element.attr(name)?.value ?? null;
}

/** RFC 822 dates: the form (error), the weekday matching the date (error), a year from 1990 and not in the future (warning). */
function checkDate(value: string, where: string, out: Findings, now: number): void {
  const m = RFC2822.exec(value);
  if (m === null) return out.error('date is not RFC 822', where, value);
  const [, weekday, day, month, year, hour, minute, second, zone] = m;
  const utc = Date.UTC(Number(year), MONTHS.indexOf(month!), Number(day), Number(hour), Number(minute), Number(second ?? 0));
  const date = new Date(utc);
  if (date.getUTCDate() !== Number(day)) return out.error('date does not exist', where, value);
  if (weekday !== undefined && WEEKDAYS[date.getUTCDay()] !== weekday) return out.error('weekday does not match the date', where, value);
  const offset = /^[+-]\d{4}$/.test(zone!) ? (zone!.startsWith('-') ? -1 : 1) * (Number(zone!.slice(1, 3)) * 60 + Number(zone!.slice(3))) * 60_000 : 0;
  if (Number(year) < 1990 || utc - offset > now + 600_000) out.warning('implausible date', where, value);
}

/** A language tag whose primary subtag is an ISO 639 code (ICU names every such code, and no other). */
function checkLanguage(value: string, where: string, out: Findings): void {
  const primary = value.split('-')[0]!.toLowerCase();
  const names = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });
  if (!/^[a-z]{2,3}$/.test(primary) || names.of(primary) === undefined) out.error('language is not an ISO 639 code', where, value);
}

function checkOnce(parent: XmlElement, names: readonly string[], prefix: string, where: string, out: Findings): void {
  for (const name of names) {
    const qname = prefix === '' ? name : `${prefix}:${name}`;
    if (children(parent, qname).length > 1) out.error('element repeated', `${where} ${qname}`);
  }
}

function checkHttpUrl(value: string | null, where: string, out: Findings): void {
  if (value === null) return out.error('attribute missing', where);
  if (!HTTP_URL.test(value) || !FULL_URI.test(value)) out.error('not an http(s) URL with a dotted host', where, value);
}

/** Text-only elements (titles, names, copyright) that hold what looks like HTML: a warning. */
function checkNoMarkup(parent: XmlElement, names: readonly string[], where: string, out: Findings): void {
  for (const name of names) {
    for (const element of children(parent, name)) if (LOOKS_LIKE_HTML.test(element.content)) out.warning('text holds markup', `${where} ${name}`, element.content);
  }
}

function checkText255(parent: XmlElement, name: string, where: string, out: Findings): void {
  for (const element of children(parent, name)) {
    const value = element.content.trim();
    if (value.length > 255) out.error('longer than 255 characters', `${where} ${name}`, value);
  }
  checkNoMarkup(parent, [name], where, out);
}

/** itunes:explicit, channel or item: `true` or `false`, any case, nothing around it. */
function checkExplicit(parent: XmlElement, where: string, out: Findings): void {
  for (const element of children(parent, 'itunes:explicit')) {
    if (!['true', 'false'].includes(element.content.toLowerCase())) out.error('itunes:explicit is not true or false', where, element.content);
  }
}

function checkItunesImages(parent: XmlElement, where: string, out: Findings): void {
  for (const image of children(parent, 'itunes:image')) checkHttpUrl(attr(image, 'href'), `${where} itunes:image href`, out);
}

/**
 * itunes:category: a `text` from Apple's list, with at most one level of subcategory from that
 * category's list, as the validator's copy of the list has it (without W3C_VALIDATOR_LACKS).
 */
function checkCategories(channel: XmlElement, out: Findings): void {
  for (const category of children(channel, 'itunes:category')) {
    const name = attr(category, 'text');
    if (name === null) {
      out.error('itunes:category without text', 'channel');
      continue;
    }
    const subcategories = APPLE_PODCAST_CATEGORIES[name];
    if (subcategories === undefined) out.error("itunes:category not in Apple's list", 'channel', name);
    for (const sub of children(category, 'itunes:category')) {
      const subName = attr(sub, 'text');
      if (subName === null) out.error('itunes:category without text', `channel itunes:category ${name}`);
      else if (!(subcategories ?? []).includes(subName) || W3C_VALIDATOR_LACKS.includes(`${name} > ${subName}`)) out.error(`subcategory of ${name} not in the validator's list`, 'channel', subName);
      if (children(sub, 'itunes:category').length > 0) out.error('itunes:category nested more than once', 'channel', subName ?? '');
    }
  }
}

/** The channel's iTunes tags, and what a channel with iTunes tags should have. */
function checkItunesChannel(channel: XmlElement, out: Findings): void {
  if (text(channel, 'language') === null) out.warning('iTunes feed without language', 'channel');
  if (children(channel, 'itunes:category').length === 0) out.warning('iTunes feed without itunes:category', 'channel');
  if (children(channel, 'itunes:explicit').length === 0) out.warning('iTunes feed without itunes:explicit', 'channel');
  if (children(channel, 'itunes:owner').length === 0) out.warning('iTunes feed without itunes:owner and its itunes:email', 'channel');
  checkText255(channel, 'itunes:author', 'channel', out);
  for (const owner of children(channel, 'itunes:owner')) {
    checkText255(owner, 'itunes:name', 'channel itunes:owner', out);
    const emails = children(owner, 'itunes:email');
    if (emails.length === 0) out.error('itunes:owner without itunes:email', 'channel');
    if (emails.length > 1) out.error('element repeated', 'channel itunes:owner itunes:email');
    for (const email of emails) if (!EMAIL.test(email.content.trim())) out.error('itunes:email is not an address', 'channel', email.content);
  }
  checkItunesImages(channel, 'channel', out);
  checkCategories(channel, out);
  checkExplicit(channel, 'channel', out);
  const type = text(channel, 'itunes:type');
  if (type !== null && !['episodic', 'serial'].includes(type)) out.error('itunes:type is not episodic or serial', 'channel', type);
  checkOnce(channel, ONCE_ITUNES_CHANNEL, 'itunes', 'channel', out);
}

/** The channel's own RSS elements, its atom:link and its image. */
function checkChannel(channel: XmlElement, out: Findings, now: number): void {
  for (const name of ['title', 'link', 'description']) if (text(channel, name) === null) out.error(`channel without ${name}`, 'channel');
  checkOnce(channel, ONCE_IN_CHANNEL, '', 'channel', out);
  const link = text(channel, 'link');
  if (link !== null && !FULL_URI.test(link.trim())) out.error('link is not an absolute URI', 'channel link', link);
  const language = text(channel, 'language');
  if (language !== null) checkLanguage(language.trim(), 'channel language', out);
  const pubDate = text(channel, 'pubDate');
  if (pubDate !== null) checkDate(pubDate.trim(), 'channel pubDate', out, now);
  checkNoMarkup(channel, ['title', 'description', 'copyright'], 'channel', out);
  const links = children(channel, 'atom:link');
  if (!links.some((l) => attr(l, 'rel') === 'self')) out.warning('no atom:link rel="self"', 'channel');
  for (const l of links) {
    const href = attr(l, 'href');
    if (href === null) out.error('atom:link without href', 'channel');
    const rel = attr(l, 'rel') ?? 'alternate';
    if (!REGISTERED_RELS.includes(rel) && !FULL_URI.test(rel)) out.warning('atom:link rel not registered', 'channel', rel);
    if (rel !== 'self') continue;
    const type = attr(l, 'type');
    if (type !== null && !['application/rss+xml', 'application/atom+xml', 'application/rdf+xml'].includes(type.split(';')[0]!)) out.warning('self link type is not a feed type', 'channel', type);
    if (href !== null && !/^[a-z][0-9a-z+.-]*:\/\/[^/]/i.test(href)) out.warning('self link is relative', 'channel', href);
  }
  for (const image of children(channel, 'image')) {
    for (const name of ['url', 'title', 'link']) if (text(image, name) === null) out.error(`image without ${name}`, 'channel image');
    checkNoMarkup(image, ['title'], 'channel image', out);
    const url = text(image, 'url') ?? '';
    const extension = url.split('.').at(-1)!.toLowerCase();
    if (/^\w+$/.test(extension) && !['jpg', 'jpeg', 'gif', 'png'].includes(extension)) out.warning('image url is not jpg, gif or png', 'channel image', url);
    if (text(image, 'title') !== text(channel, 'title')) out.warning("image title is not the channel's", 'channel image');
    if (text(image, 'link') !== link) out.warning("image link is not the channel's", 'channel image');
  }
}

function positiveInteger(value: string | null): boolean {
  return value === null || (/^\s*\+?\d+\s*$/.test(value) && Number(value) > 0);
}

/** Media RSS attributes the validator checks. */
function checkMedia(item: XmlElement, where: string, out: Findings): void {
  for (const content of children(item, 'media:content')) {
    for (const name of ['fileSize', 'width', 'height']) if (!positiveInteger(attr(content, name))) out.error(`media:content ${name} is not a positive integer`, where, attr(content, name)!);
    const duration = attr(content, 'duration');
    if (duration !== null && !/^\d+\.?\d*/.test(duration)) out.error('media:content duration is not a number', where, duration);
    const medium = attr(content, 'medium');
    if (medium !== null && !['image', 'audio', 'video', 'document', 'executable'].includes(medium)) out.error('media:content medium unknown', where, medium);
    const type = attr(content, 'type');
    if (type !== null && !MIME.test(type)) out.error('media:content type is not a media type', where, type);
  }
  for (const thumbnail of children(item, 'media:thumbnail')) {
    if (attr(thumbnail, 'url') === null) out.error('media:thumbnail without url', where);
    for (const name of ['width', 'height']) if (!positiveInteger(attr(thumbnail, name))) out.error(`media:thumbnail ${name} is not a positive integer`, where, attr(thumbnail, name)!);
  }
  for (const title of children(item, 'media:title')) {
    const type = attr(title, 'type');
    if (type !== null && !['plain', 'html'].includes(type)) out.error('media:title type is not plain or html', where, type);
    if (type !== 'html' && LOOKS_LIKE_HTML.test(title.content)) out.warning('text holds markup', `${where} media:title`, title.content);
  }
}

function checkEnclosures(item: XmlElement, where: string, itunes: boolean, out: Findings): void {
  const enclosures = children(item, 'enclosure');
  if (enclosures.length > 1) out.warning('more than one enclosure', where);
  for (const enclosure of enclosures) {
    const url = attr(enclosure, 'url');
    checkHttpUrl(url, `${where} enclosure url`, out);
    const length = attr(enclosure, 'length');
    if (length === null) out.error('enclosure without length', where);
    else if (!/^\s*[+-]?\d+\s*$/.test(length) || Number(length) < 0) out.error('enclosure length is not a non-negative integer', where, length);
    const type = attr(enclosure, 'type');
    if (type === null) out.error('enclosure without type', where);
    else if (!MIME.test(type)) out.error('enclosure type is not a media type', where, type);
    if (itunes && url !== null && !ITUNES_ENCLOSURE_EXTENSIONS.includes(url.split('.').at(-1)!)) out.warning('enclosure of a format Apple Podcasts does not play', where, url);
  }
}

function checkGuid(item: XmlElement, where: string, seen: Set<string>, out: Findings): void {
  const guids = children(item, 'guid');
  if (guids.length === 0) out.warning('item without guid', where);
  for (const guid of guids) {
    const value = guid.content.trim();
    const permaLink = attr(guid, 'isPermaLink');
    if (permaLink !== null && !['true', 'false'].includes(permaLink)) out.error('isPermaLink is not true or false', where, permaLink);
    if (permaLink !== 'false' && (!FULL_URI.test(value) || /^(tag:|urn:uuid:)/i.test(value))) out.error('permalink guid is not a URL', where, value);
    if (value === '') out.error('guid is blank', where);
    else if (seen.has(value)) out.error('guid repeated in the channel', where, value);
    seen.add(value);
  }
}

interface HtmlNode {
  nodeName: string;
  attrs?: Array<{ name: string; value: string }>;
  childNodes?: HtmlNode[];
}

/** The description's HTML, as an HTML parser reads it: no risky element, no script or style attribute, no relative link. */
function checkDescriptionHtml(item: XmlElement, where: string, out: Findings): void {
  const html = text(item, 'description');
  if (html === null) return;
  const walk = (node: HtmlNode): void => {
    if (RISKY_HTML.includes(node.nodeName)) out.warning('description holds a risky element', where, node.nodeName);
    for (const { name, value } of node.attrs ?? []) {
      if (name.startsWith('on') || name === 'style') out.warning('description holds a risky attribute', where, name);
      if ((name === 'href' || name === 'src') && !/^\w+:/.test(value.trim())) out.warning('description holds a relative URL', where, value);
    }
    for (const child of node.childNodes ?? []) walk(child);
  };
  walk(parseFragment(html) as unknown as HtmlNode);
}

/** One item: RSS elements, enclosure, guid, Media RSS and iTunes tags. */
function checkItem(item: XmlElement, where: string, seenGuids: Set<string>, itunes: boolean, out: Findings, now: number): void {
  const title = text(item, 'title');
  if (title === null && text(item, 'description') === null) out.error('item with neither title nor description', where);
  if (title !== null && title.trim() === '') out.error('item title is blank', where);
  checkNoMarkup(item, ['title'], where, out);
  checkOnce(item, ONCE_IN_ITEM, '', where, out);
  checkOnce(item, ONCE_ITUNES_ITEM, 'itunes', where, out);
  const link = text(item, 'link');
  if (link !== null && !FULL_URI.test(link.trim())) out.error('link is not an absolute URI', where, link);
  const pubDate = text(item, 'pubDate');
  if (pubDate !== null) checkDate(pubDate.trim(), `${where} pubDate`, out, now);
  for (const category of children(item, 'category')) if (category.content.trim() === '') out.error('category is blank', where);
  checkDescriptionHtml(item, where, out);
  checkEnclosures(item, where, itunes, out);
  checkGuid(item, where, seenGuids, out);
  checkMedia(item, where, out);
  const duration = text(item, 'itunes:duration');
  if (duration !== null && !DURATION.test(duration.trim())) out.error('itunes:duration is not seconds, mm:ss or hh:mm:ss', where, duration);
  const episodeType = text(item, 'itunes:episodeType');
  if (episodeType !== null && !['full', 'trailer', 'bonus'].includes(episodeType.trim())) out.error('itunes:episodeType is not full, trailer or bonus', where, episodeType);
  for (const name of ['itunes:episode', 'itunes:season']) if (!positiveInteger(text(item, name))) out.error(`${name} is not a positive integer`, where);
  checkItunesImages(item, where, out);
  checkExplicit(item, where, out);
}

/** Every finding the rules above make of an RSS 2.0 document; `now` (ms) is what "in the future" is measured from. */
export function checkRssFeed(body: string, now = Date.now()): RuleFinding[] {
  const out = new Findings();
  const declared = /^<\?xml[^>]*encoding=["']([^"']+)["']/.exec(body)?.[1];
  const doc = XmlDocument.fromString(body);
  try {
    const root = doc.root;
    if (root.name !== 'rss' || attr(root, 'version') !== '2.0') out.error('not RSS 2.0', 'rss');
    const channels = children(root, 'channel');
    if (channels.length !== 1) out.error('not one channel', 'rss');
    const channel = channels[0]!;
    const items = children(channel, 'item');
    // The validator treats a feed as an iTunes one as soon as any iTunes element appears in it.
    const itunes = doc.find('//itunes:*', NS).length > 0;
    if (itunes && declared !== undefined && !/^utf-?8$/i.test(declared)) out.warning('iTunes feed not in UTF-8', 'rss', declared);
    checkChannel(channel, out, now);
    if (itunes) checkItunesChannel(channel, out);
    const seenGuids = new Set<string>();
    items.forEach((item, i) => checkItem(item, `item ${i + 1}`, seenGuids, itunes, out, now));
  } finally {
    doc.dispose();
  }
  return out.list;
}
