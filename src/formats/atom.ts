import type { SiteContext, UserFormat } from './format.js';
import type { GroupView, UserBundle, UserView } from '../model/views.js';
import { latest, rfc3339 } from '../render/dates.js';
import { numberText } from '../render/number-text.js';
import { NS } from '../render/xml.js';
import { ATOM_ARCHIVE_PLACE, FH_NS, newestArchivePage } from './archive-places.js';
import { blank, htmlText, XML_DECLARATION, xmlAttr, xmlLeaf } from '../render/xml-text.js';

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
  return `tag:${site.paths.hostname},${date.getUTCFullYear()}:${site.paths.basePath}/${specific}`;
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

/**
 * A user's Atom document holding `groups` (newest first): the current feed or an archive page.
 *
 * Written as markup with xml-text.ts's escaping (xmlLeaf, xmlAttr), as the RSS feed is, not through
 * xmlDocument: a feed-heavy site's build renders two million entries, and making each through
 * xmlDocument's calls cost more than the entry's own text (docs/performance.md, "Figures behind the
 * code"). test/formats/atom.test.ts holds the two to the byte.
 */
export function atomDocument(user: UserView, groups: readonly GroupView[], site: SiteContext, page: AtomPage): string {
  const { config, paths, generator } = site;
  // A display name blank once XML can carry it would leave the author nameless (groupEntry).
  const name = page.archive || blank(user.displayName) ? user.username : user.displayName;
  // An archive page's time is its own entries'; the user's profile does not move it.
  const updated = latest(groups.map((g) => g.updatedAt), page.archive ? user.createdAt : user.updatedAt);
  const userPage = paths.userPage(user.username);
  const language = xmlAttr(config.language);
  let out =
    `${XML_DECLARATION}<feed xmlns="${NS.atom}" xmlns:media="${NS.media}"${page.archive ? ` xmlns:fh="${FH_NS}"` : ''} xml:lang="${language}">` +
    xmlLeaf('title', `${config.siteName}: groups of ${name}`, ' type="text"') +
    xmlLeaf('subtitle', `The groups ${htmlText(user.username)} belongs to on ${htmlText(config.siteName)}.`, ' type="html"') +
    `<updated>${rfc3339(updated)}</updated>` +
    xmlLeaf('id', tagUri(site, user.createdAt, `users/${encodeURIComponent(user.username)}/groups`)) +
    `<link rel="alternate" type="text/html" hreflang="${language}" href="${xmlAttr(userPage)}"/>` +
    `<link rel="self" type="application/atom+xml" href="${xmlAttr(page.self)}"/>`;
  // WebSub discovery: the hubs that hear of this feed's changes, beside its self link.
  if (!page.archive) for (const hub of config.websub.hubs) out += `<link rel="hub" href="${xmlAttr(hub)}"/>`;
  for (const { rel, href } of page.links) out += `<link rel="${xmlAttr(rel)}" href="${xmlAttr(href)}"/>`;
  if (page.archive) out += '<fh:archive/>';
  // RFC 4287 wants an author for the feed or for every entry; the feed is the user's.
  out +=
    `<author>${xmlLeaf('name', name)}${xmlLeaf('uri', userPage)}</author>` +
    xmlLeaf('rights', config.copyright) +
    xmlLeaf('generator', generator.name, ` uri="${xmlAttr(generator.uri)}" version="${xmlAttr(generator.version)}"`);
  const entryId = `users/${encodeURIComponent(user.username)}/groups/`;
  for (const group of groups) out += groupEntry(group, entryId, site);
  return `${out}</feed>\n`;
}

/**
 * One group's entry. RFC 4287 wants a title on every entry, and the W3C validator refuses an empty
 * one (and an empty `title` attribute of a link, and an empty author name): a group whose title is
 * blank once XML can carry it is titled by its slug, else by its page; a featured video's blank
 * title is left out of its link; an owner's blank display name gives way to the username.
 *
 * `entryId` is the user's part of the entry's id: the same group in two members' feeds must have
 * two ids (readers key entries by id across all their feeds), one each, the same on every build.
 */
function groupEntry(group: GroupView, entryId: string, site: SiteContext): string {
  const page = site.paths.groupPage(group.slug);
  const featured = group.featuredVideo;
  let out =
    '<entry>' +
    xmlLeaf('title', blank(group.title) ? (blank(group.slug) ? page : group.slug) : group.title, ' type="text"') +
    `<link rel="alternate" type="text/html" href="${xmlAttr(page)}"/>`;
  let fileUrl = '';
  let fileType = '';
  if (featured !== null) {
    fileUrl = xmlAttr(featured.fileUrl);
    fileType = xmlAttr(featured.fileType);
    out +=
      `<link rel="enclosure" type="${fileType}"` +
      (featured.fileSize === null ? '' : ` length="${numberText(featured.fileSize)}"`) +
      ` href="${fileUrl}"` +
      (blank(featured.title) ? '' : ` title="${xmlAttr(featured.title)}"`) +
      '/>';
  }
  const owner = group.owner;
  out +=
    xmlLeaf('id', tagUri(site, group.createdAt, entryId + encodeURIComponent(group.slug))) +
    `<updated>${rfc3339(group.updatedAt)}</updated><published>${rfc3339(group.createdAt)}</published>` +
    `<author>${xmlLeaf('name', blank(owner.displayName) ? owner.username : owner.displayName)}${xmlLeaf('uri', site.paths.userPage(owner.username))}</author>`;
  if (group.description !== '') out += xmlLeaf('summary', group.description, ' type="text"');
  if (featured !== null) {
    out +=
      `<media:content url="${fileUrl}" type="${fileType}" medium="video"` +
      (featured.fileSize === null ? '' : ` fileSize="${numberText(featured.fileSize)}"`) +
      (featured.durationSeconds === null ? '' : ` duration="${numberText(featured.durationSeconds)}"`) +
      `/><media:thumbnail url="${xmlAttr(featured.thumbnailUrl)}" width="${numberText(featured.thumbnailWidth)}" height="${numberText(featured.thumbnailHeight)}"/>`;
  }
  return `${out}</entry>`;
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
