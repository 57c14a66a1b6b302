import type { SiteContext, UserFormat } from './format.js';
import type { PersonRef, UserBundle, UserView, VideoView } from '../model/views.js';
import { rfc822, w3cDate } from '../render/dates.js';
import { handlebars } from '../render/templates.js';
import { numberText } from '../render/number-text.js';
import { NS } from '../render/xml.js';
import { blank, flat, htmlText, personName, XML_DECLARATION, xmlAttr, xmlChars, xmlLeaf } from '../render/xml-text.js';
import { FH_NS, newestArchivePage, RSS_ARCHIVE_PLACE } from './archive-places.js';
import { itunesSiteTags, PODCAST_NS, podcastChannel, podcastItem, podcastLanguage } from './podcast-tags.js';

/**
 * RSS 2.0 feed of a user's latest public uploads (seed 2.8), newest first, at most 20, with Media
 * RSS. Differences from the seed: the item `author` becomes `dc:creator`, because RSS 2.0's
 * `author` holds an e-mail address.
 */

// Characters Handlebars escapes, and those xmlChars would change (its quick test): most values hold none.
const HTML_MAY_CHANGE = /[&<>"'`=\u0000-\u0008\u000B-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/;

/**
 * A value in the description: as XML can carry it (xmlChars), then with Handlebars' own HTML
 * escaping (`&<>"'\`=`), as `{{value}}` in a template applies it.
 */
function html(text: string): string {
  return HTML_MAY_CHANGE.test(text) ? handlebars.Utils.escapeExpression(xmlChars(text)) : text;
}

/**
 * The item description (seed 2.8): linked thumbnail, description, added-by link, tag links, date
 * line. Built as one string with the escaping a Handlebars template would apply (the template is
 * in test/formats/rss-description.test.ts, which holds the two to the byte), because running the
 * compiled template for every item of every feed costs more than building the string.
 *
 * Every value in it is clean (xmlChars) and has its `>` escaped, and the markup around them is
 * ours, so it holds no character XML forbids and no `]]>`: one CDATA section carries it as it is,
 * without scanning a kilobyte per item again (see `item`).
 */
export function itemDescription(
  video: VideoView,
  site: SiteContext,
  page = site.paths.videoPage(video.publicId),
  uploader = uploaderMarkup(video.uploader, site),
  tags = tagMarkup(site, video.tags),
): string {
  return (
    `<p><a href="${html(page)}"><img src="${html(video.thumbnailUrl)}" width="${video.thumbnailWidth}"` +
    ` height="${video.thumbnailHeight}" alt="${html(video.title)}"></a></p>` +
    `<p>${html(video.description)}</p>` +
    uploader.addedBy +
    tags.links +
    // A date is digits and dashes: nothing to escape.
    `<p>Date: ${w3cDate(video.createdAt)}</p>`
  );
}

/**
 * What an item shows of its tags: the description's paragraph of tag links ('' without tags) and
 * the `media:keywords` element ('' likewise).
 */
interface TagMarkup {
  links: string;
  keywords: string;
}

const NO_TAG_MARKUP: TagMarkup = { links: '', keywords: '' };

/**
 * Tag markup kept per site by tag list. The reader hands out one frozen array per combination of
 * tags while a snapshot is open (SiteReader's `tagLists`), and videos share a few combinations, so
 * the links and keywords are made once per combination rather than once per video. A list no
 * reader holds any more is dropped with it.
 */
const tagMarkups = new WeakMap<SiteContext, WeakMap<readonly string[], TagMarkup>>();
let lastSite: { site: SiteContext; kept: WeakMap<readonly string[], TagMarkup> } | null = null;

function tagMarkup(site: SiteContext, tags: readonly string[]): TagMarkup {
  if (tags.length === 0) return NO_TAG_MARKUP;
  if (lastSite?.site !== site) {
    let kept = tagMarkups.get(site);
    if (kept === undefined) tagMarkups.set(site, (kept = new WeakMap()));
    lastSite = { site, kept };
  }
  const { kept } = lastSite;
  let markup = kept.get(tags);
  if (markup === undefined) {
    let links = '';
    for (const name of tags) links += ` <a href="${html(site.paths.tagPage(name))}" rel="tag">${html(name)}</a>`;
    markup = { links: flat(`<p>Tags:${links}</p>`), keywords: flat(xmlLeaf('media:keywords', tags.join(', '))) };
    kept.set(tags, markup);
  }
  return markup;
}

/**
 * What an item shows of its uploader, made once for all the items of one uploader (every item of
 * a user's feed), rather than once per item.
 */
interface UploaderMarkup {
  person: PersonRef;
  /** The description's "Added by" paragraph. */
  addedBy: string;
  /** The `dc:creator` element. */
  creator: string;
}

function uploaderMarkup(person: PersonRef, site: SiteContext): UploaderMarkup {
  return {
    person,
    addedBy: flat(`<p>Added by <a href="${html(site.paths.userPage(person.username))}">${html(person.username)}</a></p>`),
    creator: flat(xmlLeaf('dc:creator', person.username)),
  };
}

/**
 * One `<item>`. The feed is written as markup with xml.ts's escaping (xmlLeaf, xmlAttr), not through
 * xmlDocument: a feed-heavy site's build renders a million items, and building each through
 * xmlDocument's calls costs more than the item's own text. test/formats/rss.test.ts holds the two
 * to the byte.
 */
function item(video: VideoView, site: SiteContext, uploader: UploaderMarkup, podcast: boolean): string {
  const page = site.paths.videoPage(video.publicId);
  const fileUrl = xmlAttr(video.fileUrl);
  const fileType = xmlAttr(video.fileType);
  const { width, height } = video;
  // Sizes and durations differ from video to video: their text is made outside V8's cache (numberText).
  const fileSize = video.fileSize === null ? null : numberText(video.fileSize);
  const durationSeconds = video.durationSeconds === null ? null : numberText(video.durationSeconds);
  const tags = tagMarkup(site, video.tags);
  // RSS 2.0 wants a title or a description; a title blank once XML can carry it is an error to the
  // W3C validator ("item title is blank"), so it is left out, here and as media:title: the item
  // keeps its description.
  const titled = !blank(video.title);
  return (
    `<item>${titled ? xmlLeaf('title', video.title) : ''}${xmlLeaf('link', page)}<description><![CDATA[${itemDescription(video, site, page, uploader, tags)}]]></description>` +
    uploader.creator +
    (video.category === null ? '' : categoryElement(video.category)) +
    // Every video's item has its enclosure: readers (XML::Feed, Ruby's rss, rss2email) show no file
    // without one. RSS Best Practices Profile: `length="0"` when the size is unknown.
    `<enclosure url="${fileUrl}" length="${fileSize ?? 0}" type="${fileType}"/>` +
    xmlLeaf('guid', page, ' isPermaLink="true"') +
    // A date made of letters, digits and punctuation XML leaves alone: not tested for escaping,
    // since testing a fresh concatenation makes V8 flatten it first.
    `<pubDate>${rfc822(video.createdAt)}</pubDate>` +
    `<media:content url="${fileUrl}" type="${fileType}" medium="video"` +
    (fileSize === null ? '' : ` fileSize="${fileSize}"`) +
    (durationSeconds === null ? '' : ` duration="${durationSeconds}"`) +
    (width === null ? '' : ` width="${width}"`) +
    (height === null ? '' : ` height="${height}"`) +
    `/><media:thumbnail url="${xmlAttr(video.thumbnailUrl)}" width="${video.thumbnailWidth}" height="${video.thumbnailHeight}"/>` +
    (titled ? xmlLeaf('media:title', video.title, ' type="plain"') : '') +
    tags.keywords +
    (podcast ? podcastItem(video) : '') +
    '</item>'
  );
}

/** Category elements by name, at most CATEGORIES_KEPT (the map starts again when full): a site has a few categories. */
const CATEGORIES_KEPT = 256;
const categoryElements = new Map<string, string>();

function categoryElement(name: string): string {
  let element = categoryElements.get(name);
  if (element === undefined) {
    if (categoryElements.size >= CATEGORIES_KEPT) categoryElements.clear();
    element = flat(xmlLeaf('category', name));
    categoryElements.set(name, element);
  }
  return element;
}

/** Items in a user's RSS feed, newest first: the reader loads no more uploads than this (read-limits.ts passes it on). */
export const RSS_ITEMS = 20;

/** What tells one RSS document of a user from another: the current feed, or a page of its archive. */
export interface RssPage {
  /** The document's own URL (`atom:link rel="self"`). */
  self: string;
  /** The RFC 5005 links (`prev-archive`, `next-archive`, `current`) as `atom:link` markup. */
  links: string;
  /**
   * A page of the archive: `fh:archive`, no hub, and a channel made of the username and the site
   * alone, so that a complete page changes only when one of its items does.
   */
  archive: boolean;
}

/** An `atom:link` of RFC 5005 (prev-archive, next-archive, current). */
export function archiveLink(rel: string, href: string): string {
  return `<atom:link rel="${rel}" href="${xmlAttr(href)}"/>`;
}

/** A user's RSS document holding `uploads` (newest first): the current feed or an archive page. */
export function rssDocument(user: UserView, uploads: readonly VideoView[], site: SiteContext, page: RssPage): string {
  // A display name blank once XML can carry it (U+0007, spaces) would title the feed "latest
  // videos of ": the username stands in (personName), as in the Atom feed and itunes:author.
  const name = page.archive ? user.username : personName(user);
  const title = `${site.config.siteName}: ${page.archive ? 'videos' : 'latest videos'} of ${name}`;
  const link = site.paths.userPage(user.username);
  const podcast = site.config.feeds.podcast;
  const namespaces =
    (podcast === null ? '' : ` xmlns:itunes="${PODCAST_NS.itunes}" xmlns:podcast="${PODCAST_NS.podcast}"`) + (page.archive ? ` xmlns:fh="${FH_NS}"` : '');
  let out =
    `${XML_DECLARATION}<rss version="2.0" xmlns:media="${NS.media}" xmlns:dc="${NS.dc}" xmlns:atom="${NS.atom}"${namespaces}><channel>` +
    xmlLeaf('title', title) +
    xmlLeaf('link', link) +
    // Many readers show a channel's description as HTML (feedparser does), others as text: the
    // names in it are text either way (htmlText).
    xmlLeaf('description', `${page.archive ? 'Videos' : 'The latest videos'} ${htmlText(user.username)} uploaded to ${htmlText(site.config.siteName)}.`) +
    xmlLeaf('language', podcastLanguage(podcast, site.config.language)) +
    xmlLeaf('copyright', site.config.copyright);
  if (uploads.length > 0) out += xmlLeaf('pubDate', rfc822(uploads[0]!.createdAt));
  out += `${xmlLeaf('generator', site.generator.name)}<atom:link rel="self" type="application/rss+xml" href="${xmlAttr(page.self)}"/>`;
  // WebSub discovery: the hubs that hear of this feed's changes, beside its self link.
  if (!page.archive) for (const hub of site.config.websub.hubs) out += `<atom:link rel="hub" href="${xmlAttr(hub)}"/>`;
  out += page.links;
  if (page.archive) out += '<fh:archive/>';
  if (site.config.logoUrl !== '') out += `<image>${xmlLeaf('url', site.config.logoUrl)}${xmlLeaf('title', title)}${xmlLeaf('link', link)}</image>`;
  if (podcast !== null) {
    const image = podcast.image ?? site.config.logoUrl;
    out += page.archive ? itunesSiteTags(podcast, image) : podcastChannel(podcast, user, page.self, image);
  }
  let uploader: UploaderMarkup | null = null;
  for (const video of uploads) {
    if (uploader?.person !== video.uploader) uploader = uploaderMarkup(video.uploader, site);
    out += item(video, site, uploader, podcast !== null);
  }
  return `${out}</channel></rss>\n`;
}

export const rss: UserFormat = {
  name: 'rss',
  scope: 'user',
  dir: 'rss',
  file: 'index.rss',
  urlName: '',
  mediaType: 'application/rss+xml; charset=utf-8',
  inSitemap: true,
  summary: "RSS 2.0 feed of the user's latest public uploads",
  cacheClass: 'feeds',
  websubTopic: true,
  needs: ['uploads', 'archivedUploads'],

  render({ user, uploads, archived }: UserBundle, site: SiteContext): string {
    const newest = newestArchivePage(archived.uploads);
    // RFC 5005: the subscription document links to the newest archive page.
    const links = newest === null ? '' : archiveLink('prev-archive', site.paths.url(RSS_ARCHIVE_PLACE, user.username, newest));
    return rssDocument(user, uploads, site, { self: site.paths.url(rss, user.username), links, archive: false });
  },
};
