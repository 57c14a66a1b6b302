import type { SiteContext, UserFormat } from './format.js';
import type { PersonRef, UserBundle, VideoView } from '../model/views.js';
import { rfc822, w3cDate } from '../render/dates.js';
import { handlebars } from '../render/templates.js';
import { NS, XML_DECLARATION, xmlAttr, xmlChars, xmlLeaf } from '../render/xml.js';

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
 * in test/formats/rss-description.test.ts, which holds the two to the byte): compiling it cost
 * each feed of 20 items about 40 µs in Handlebars' runtime (docs/performance.md).
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
): string {
  let tags = '';
  for (const name of video.tags) tags += tagLink(site, name);
  return (
    `<p><a href="${html(page)}"><img src="${html(video.thumbnailUrl)}" width="${video.thumbnailWidth}"` +
    ` height="${video.thumbnailHeight}" alt="${html(video.title)}"></a></p>` +
    `<p>${html(video.description)}</p>` +
    uploader.addedBy +
    (tags === '' ? '' : `<p>Tags:${tags}</p>`) +
    // A date is digits and dashes: nothing to escape.
    `<p>Date: ${w3cDate(video.createdAt)}</p>`
  );
}

/** Tag links kept per site, at most this many (the map starts again when full). */
const TAG_LINKS_KEPT = 4096;
const tagLinks = new WeakMap<SiteContext, Map<string, string>>();

/**
 * A tag's link in the description, with its leading space. Tags repeat from video to video, and
 * escaping and joining their links again for each took 6% of rendering a feed-heavy site's feed.
 */
function tagLink(site: SiteContext, name: string): string {
  let links = tagLinks.get(site);
  if (links === undefined) tagLinks.set(site, (links = new Map()));
  let link = links.get(name);
  if (link === undefined) {
    if (links.size >= TAG_LINKS_KEPT) links.clear();
    link = ` <a href="${html(site.paths.tagPage(name))}" rel="tag">${html(name)}</a>`;
    links.set(name, link);
  }
  return link;
}

/**
 * What an item shows of its uploader, made once for all the items of one uploader (every item of
 * a user's feed): remade for each item, it was an eighth of rendering a 20-item feed.
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
    addedBy: `<p>Added by <a href="${html(site.paths.userPage(person.username))}">${html(person.username)}</a></p>`,
    creator: xmlLeaf('dc:creator', person.username),
  };
}

/**
 * One `<item>`. The feed is written as markup with xml.ts's escaping (xmlLeaf, xmlAttr), not through
 * xmlDocument: a feed-heavy site's build renders a million items, and the calls of xmlDocument
 * cost a third of each (docs/performance.md). test/formats/rss.test.ts holds the two to the byte.
 */
function item(video: VideoView, site: SiteContext, uploader: UploaderMarkup): string {
  const page = site.paths.videoPage(video.publicId);
  const fileUrl = xmlAttr(video.fileUrl);
  const fileType = xmlAttr(video.fileType);
  const { fileSize, durationSeconds, width, height } = video;
  return (
    `<item>${xmlLeaf('title', video.title)}${xmlLeaf('link', page)}<description><![CDATA[${itemDescription(video, site, page, uploader)}]]></description>` +
    uploader.creator +
    (video.category === null ? '' : xmlLeaf('category', video.category)) +
    (fileSize === null ? '' : `<enclosure url="${fileUrl}" length="${fileSize}" type="${fileType}"/>`) +
    xmlLeaf('guid', page, ' isPermaLink="true"') +
    // A date made of letters, digits and punctuation XML leaves alone: not tested for escaping
    // (testing a fresh concatenation flattens it first, a tenth of rendering an item).
    `<pubDate>${rfc822(video.createdAt)}</pubDate>` +
    `<media:content url="${fileUrl}" type="${fileType}" medium="video"` +
    (fileSize === null ? '' : ` fileSize="${fileSize}"`) +
    (durationSeconds === null ? '' : ` duration="${durationSeconds}"`) +
    (width === null ? '' : ` width="${width}"`) +
    (height === null ? '' : ` height="${height}"`) +
    `/><media:thumbnail url="${xmlAttr(video.thumbnailUrl)}" width="${video.thumbnailWidth}" height="${video.thumbnailHeight}"/>` +
    xmlLeaf('media:title', video.title, ' type="plain"') +
    (video.tags.length === 0 ? '' : xmlLeaf('media:keywords', video.tags.join(', '))) +
    '</item>'
  );
}

/** Items in a user's RSS feed, newest first: the reader loads no more uploads than this (PRODUCT.md, "done"). */
export const RSS_ITEMS = 20;

export const rss: UserFormat = {
  name: 'rss',
  scope: 'user',
  dir: 'rss',
  file: 'index.rss',
  urlName: '',
  mediaType: 'application/rss+xml; charset=utf-8',
  inSitemap: true,
  summary: "RSS 2.0 feed of the user's latest public uploads",
  needs: ['uploads'],

  render({ user, uploads }: UserBundle, site: SiteContext): string {
    const title = `${site.config.siteName}: latest videos of ${user.displayName || user.username}`;
    const link = site.paths.userPage(user.username);
    let out =
      `${XML_DECLARATION}<rss version="2.0" xmlns:media="${NS.media}" xmlns:dc="${NS.dc}" xmlns:atom="${NS.atom}"><channel>` +
      xmlLeaf('title', title) +
      xmlLeaf('link', link) +
      xmlLeaf('description', `The latest videos ${user.username} uploaded to ${site.config.siteName}.`) +
      xmlLeaf('language', site.config.language) +
      xmlLeaf('copyright', site.config.copyright);
    if (uploads.length > 0) out += xmlLeaf('pubDate', rfc822(uploads[0]!.createdAt));
    out += `${xmlLeaf('generator', site.generator.name)}<atom:link rel="self" type="application/rss+xml" href="${xmlAttr(site.paths.url(rss, user.username))}"/>`;
    if (site.config.logoUrl !== '') out += `<image>${xmlLeaf('url', site.config.logoUrl)}${xmlLeaf('title', title)}${xmlLeaf('link', link)}</image>`;
    let uploader: UploaderMarkup | null = null;
    for (const video of uploads) {
      if (uploader?.person !== video.uploader) uploader = uploaderMarkup(video.uploader, site);
      out += item(video, site, uploader);
    }
    return `${out}</channel></rss>\n`;
  },
};
