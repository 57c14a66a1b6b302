import type { ArchiveFormat, ArchivePage, SiteContext } from './format.js';
import type { KeyedPlace } from '../paths/url-scheme.js';
import { ATOM_ARCHIVE_PLACE, RSS_ARCHIVE_PLACE } from './archive-places.js';
import { atom, atomDocument } from './atom.js';
import { archiveLink, rss, rssDocument } from './rss.js';

/**
 * The RFC 5005 archives of a user's feeds ("Feed Paging and Archiving", section 4: archived
 * feeds), so that a subscriber can walk back through everything the user ever published: the
 * current feed (the 20 newest) links to the newest archive page with `prev-archive`; each page
 * links to the one before and after it and to the current feed (`current`), and says it is an
 * archive (`fh:archive`).
 *
 * The pages hold the rows beyond the feed's newest, oldest first by upload time (then id); which
 * rows start a page depends on the rows alone, and a page is numbered by its newest row
 * (`planArchivePages`), so a page's URL always names the same entries (RFC 5005 section 4): a
 * page's entries change only when one of its own items is edited, removed or made private, and a
 * new upload moves the newest page to a new URL (and so changes the `next-archive` link of the
 * page before it). Within a page, as in the feed, the items are newest first: a
 * reader that follows `prev-archive` from the current feed meets every item once, newest to
 * oldest.
 */

/** The RFC 5005 links of a page: the pages either side, and the current feed. */
function pageLinks(place: KeyedPlace, current: KeyedPlace, username: string, { prev, next }: ArchivePage, site: SiteContext) {
  const links: Array<{ rel: string; href: string }> = [];
  if (prev !== null) links.push({ rel: 'prev-archive', href: site.paths.url(place, username, prev) });
  if (next !== null) links.push({ rel: 'next-archive', href: site.paths.url(place, username, next) });
  links.push({ rel: 'current', href: site.paths.url(current, username) });
  return links;
}

export const rssArchive: ArchiveFormat = {
  name: 'rss-archive',
  scope: 'user',
  ...RSS_ARCHIVE_PLACE,
  mediaType: 'application/rss+xml; charset=utf-8',
  inSitemap: false,
  summary: "RFC 5005 archive pages of the RSS feed: every public upload older than the feed's, about 100 a page",
  // An upload moves the newest page to a new URL, and rewrites the link to it: kept no longer than the feed.
  cacheClass: 'feeds',
  list: 'uploads',
  needs: ['archivedUploads'],

  renderPage({ user }, page, site) {
    const links = pageLinks(rssArchive, rss, user.username, page, site).map(({ rel, href }) => archiveLink(rel, href)).join('');
    const newestFirst = [...page.uploads].reverse();
    return rssDocument(user, newestFirst, site, { self: site.paths.url(rssArchive, user.username, page.number), links, archive: true });
  },
};

export const atomArchive: ArchiveFormat = {
  name: 'atom-archive',
  scope: 'user',
  ...ATOM_ARCHIVE_PLACE,
  mediaType: 'application/atom+xml; charset=utf-8',
  inSitemap: false,
  summary: "RFC 5005 archive pages of the Atom feed: every group older than the feed's, about 100 a page",
  // An upload moves the newest page to a new URL, and rewrites the link to it: kept no longer than the feed.
  cacheClass: 'feeds',
  list: 'groups',
  needs: ['archivedGroups'],

  renderPage({ user }, page, site) {
    const links = pageLinks(atomArchive, atom, user.username, page, site);
    const newestFirst = [...page.groups].reverse();
    return atomDocument(user, newestFirst, site, { self: site.paths.url(atomArchive, user.username, page.number), links, archive: true });
  },
};
