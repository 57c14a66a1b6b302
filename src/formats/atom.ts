import type { SiteContext, UserFormat } from './format.js';
import type { GroupView, UserBundle, UserView } from '../model/views.js';
import { latest, rfc3339 } from '../render/dates.js';
import { NS, xmlDocument } from '../render/xml.js';
import type { XmlElement } from '../render/xml-element.js';
import { ATOM_ARCHIVE_PLACE, FH_NS, newestArchivePage } from './archive-places.js';
import { blank, htmlText } from '../render/xml-text.js';

/**
 * Atom 1.0 feed of the 20 most recent groups a user belongs to (seed 2.9), one entry per group.
 * Corrections of the seed, required by RFC 4287: the enclosure's `length` is the file's size in
 * bytes (left out when unknown; the duration goes to `media:content`); `updated` is a real
 * timestamp; the author's `email` is left out (the seed's hash is not an address). Each entry's id
 * is unique to its feed (feed readers such as newsboat key entries by id across every feed they
 * read, and a group shared by two members would otherwise show in one feed only).
 */

/** A stable Atom id for a thing on this site: a tag URI (RFC 4151) from the site's host. */
function tagUri(site: SiteContext, date: Date, specific: string): string {
  const host = new URL(site.paths.base).hostname;
  return `tag:${host},${date.getUTCFullYear()}:${site.paths.basePath}/${specific}`;
}

/** Groups in a user's Atom feed, newest first: the reader loads no more than this (read-limits.ts passes it on). */
export const ATOM_ENTRIES = 20;

/** What tells one Atom document of a user from another: the current feed, or a page of its archive. */
export interface AtomPage {
  /** The document's own URL (`link rel="self"`). */
  self: string;
  /** The RFC 5005 links (`prev-archive`, `next-archive`, `current`). */
  links: ReadonlyArray<{ rel: string; href: string }>;
  /**
   * A page of the archive: `fh:archive`, no hub, and a feed made of the username, the site and
   * its entries alone, so that a complete page changes only when one of its entries does.
   */
  archive: boolean;
}

/** A user's Atom document holding `groups` (newest first): the current feed or an archive page. */
export function atomDocument(user: UserView, groups: readonly GroupView[], site: SiteContext, page: AtomPage): string {
  const attrs = { xmlns: NS.atom, 'xmlns:media': NS.media, ...(page.archive ? { 'xmlns:fh': FH_NS } : {}), 'xml:lang': site.config.language };
  return xmlDocument('feed', attrs, (feed) => {
    // A display name blank once XML can carry it would leave the author nameless (groupEntry).
    const name = page.archive || blank(user.displayName) ? user.username : user.displayName;
    // An archive page's time is its own entries'; the user's profile does not move it.
    const updated = latest(groups.map((g) => g.updatedAt), page.archive ? user.createdAt : user.updatedAt);
    feed
      .leaf('title', `${site.config.siteName}: groups of ${name}`, { type: 'text' })
      .leaf('subtitle', `The groups ${htmlText(user.username)} belongs to on ${htmlText(site.config.siteName)}.`, { type: 'html' })
      .leaf('updated', rfc3339(updated))
      .leaf('id', tagUri(site, user.createdAt, `users/${encodeURIComponent(user.username)}/groups`));
    feed.el('link', { rel: 'alternate', type: 'text/html', hreflang: site.config.language, href: site.paths.userPage(user.username) });
    feed.el('link', { rel: 'self', type: 'application/atom+xml', href: page.self });
    // WebSub discovery: the hubs that hear of this feed's changes, beside its self link.
    if (!page.archive) for (const hub of site.config.websub.hubs) feed.el('link', { rel: 'hub', href: hub });
    for (const link of page.links) feed.el('link', link);
    if (page.archive) feed.el('fh:archive');
    // RFC 4287 wants an author for the feed or for every entry; the feed is the user's.
    feed.el('author').leaf('name', name).leaf('uri', site.paths.userPage(user.username));
    feed.leaf('rights', site.config.copyright);
    feed.leaf('generator', site.generator.name, { uri: site.generator.uri, version: site.generator.version });
    for (const group of groups) groupEntry(feed, group, user, site);
  }, { engine: site.xmlEngine });
}

/**
 * One group's entry. RFC 4287 wants a title on every entry, and the W3C validator refuses an empty
 * one (and an empty `title` attribute of a link, and an empty author name): a group whose title is
 * blank once XML can carry it is titled by its slug, else by its page; a featured video's blank
 * title is left out of its link; an owner's blank display name gives way to the username.
 */
function groupEntry(feed: XmlElement, group: GroupView, user: UserView, site: SiteContext): void {
  const entry = feed.el('entry');
  const page = site.paths.groupPage(group.slug);
  entry.leaf('title', [group.title, group.slug].find((title) => !blank(title)) ?? page, { type: 'text' });
  entry.el('link', { rel: 'alternate', type: 'text/html', href: page });
  const featured = group.featuredVideo;
  if (featured !== null) {
    entry.el('link', { rel: 'enclosure', type: featured.fileType, length: featured.fileSize, href: featured.fileUrl, title: blank(featured.title) ? null : featured.title });
  }
  entry
    // The group in this user's feed: readers key entries by id across all their feeds, so the
    // same group in two members' feeds must have two ids (one each, the same on every build).
    .leaf('id', tagUri(site, group.createdAt, `users/${encodeURIComponent(user.username)}/groups/${encodeURIComponent(group.slug)}`))
    .leaf('updated', rfc3339(group.updatedAt))
    .leaf('published', rfc3339(group.createdAt));
  const author = entry.el('author');
  author.leaf('name', blank(group.owner.displayName) ? group.owner.username : group.owner.displayName).leaf('uri', site.paths.userPage(group.owner.username));
  if (group.description !== '') entry.leaf('summary', group.description, { type: 'text' });
  if (featured !== null) {
    entry.el('media:content', {
      url: featured.fileUrl,
      type: featured.fileType,
      medium: 'video',
      fileSize: featured.fileSize,
      duration: featured.durationSeconds,
    });
    entry.el('media:thumbnail', { url: featured.thumbnailUrl, width: featured.thumbnailWidth, height: featured.thumbnailHeight });
  }
}

export const atom: UserFormat = {
  name: 'atom',
  scope: 'user',
  dir: 'atom',
  file: 'index.atom',
  urlName: '',
  mediaType: 'application/atom+xml; charset=utf-8',
  inSitemap: true,
  summary: 'Atom 1.0 feed of the groups the user belongs to',
  cacheClass: 'feeds',
  websubTopic: true,
  needs: ['groups', 'archivedGroups'],

  render({ user, groups, archived }: UserBundle, site: SiteContext): string {
    const newest = newestArchivePage(archived.groups);
    // RFC 5005: the subscription document links to the newest archive page.
    const links = newest === null ? [] : [{ rel: 'prev-archive', href: site.paths.url(ATOM_ARCHIVE_PLACE, user.username, newest) }];
    return atomDocument(user, groups, site, { self: site.paths.url(atom, user.username), links, archive: false });
  },
};
