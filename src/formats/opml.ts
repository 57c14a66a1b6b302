import type { SiteContext, UserFormat } from './format.js';
import type { ReadingListEntry, UserBundle } from '../model/views.js';
import { earliest, latest, rfc822 } from '../render/dates.js';
import { NS, xmlDocument } from '../render/xml.js';
import { type XmlElement } from '../render/xml-element.js';
import { personName, xmlChars } from '../render/xml-text.js';

/**
 * OPML 2.0 reading list (seed 2.7): the feeds the user reads, one `outline` per category holding
 * an `outline type="rss"` per feed; feeds without a category follow at the top level.
 *
 * Corrections of the seed, for OPML 2.0: dates are RFC 822; `ownerId` (the profile page) replaces
 * the hashed `ownerEmail` (`ownerEmail` holds an address, written only when the user shows it);
 * the head's `link` becomes `atom:link rel="self"`, since OPML 2.0 has no `link` in `head` and
 * extensions must be namespaced.
 *
 * OPML 2.0 requires at least one `outline` in `body`. A user with an empty reading list gets one
 * outline with `isComment="true"` saying so: the document stays valid, outliners show the note,
 * and feed readers importing the list find no feed in it (see docs/formats.md).
 */

const OPML_DOCS = 'http://opml.org/spec2.opml';

/**
 * Whether `text` has the address shape OPML 2.0's `ownerEmail` is checked against
 * (`[^@\s]+@[^@\s]+\.[^@\s]+`). Checked without that regular expression, which backtracks: its
 * time grows with the square of the length on a value like `a@....… ` (docs/database.md,
 * "Time is linear"). The domain needs a dot with text on both sides.
 */
export function opmlEmail(text: string): boolean {
  if (/\s/.test(text)) return false;
  const at = text.indexOf('@');
  if (at < 1 || text.indexOf('@', at + 1) !== -1) return false;
  const domain = text.slice(at + 1);
  const dot = domain.indexOf('.', 1);
  return dot !== -1 && dot < domain.length - 1;
}

function feedOutline(parent: XmlElement, entry: ReadingListEntry): void {
  parent.el('outline', {
    type: 'rss',
    text: entry.title || entry.xmlUrl,
    title: entry.title,
    description: entry.description || null,
    htmlUrl: entry.htmlUrl,
    xmlUrl: entry.xmlUrl,
    created: rfc822(entry.createdAt),
  });
}

export const opml: UserFormat = {
  name: 'opml',
  scope: 'user',
  dir: 'opml',
  file: 'index.opml',
  urlName: '',
  mediaType: 'text/x-opml; charset=utf-8',
  inSitemap: true,
  summary: "OPML 2.0 reading list: the feeds the user reads, grouped by category",
  cacheClass: 'feeds',
  needs: ['readingList'],

  render({ user, readingList }: UserBundle, site: SiteContext): string {
    const owner = personName(user);
    const created = earliest(readingList.map((e) => e.createdAt), user.createdAt);
    const modified = latest(readingList.map((e) => e.updatedAt), user.updatedAt);

    return xmlDocument('opml', { version: '2.0', 'xmlns:atom': NS.atom }, (root) => {
      const head = root.el('head');
      head
        .leaf('docs', OPML_DOCS)
        .leaf('title', `Reading list of ${owner} on ${site.config.siteName}`)
        .leaf('dateCreated', rfc822(created))
        .leaf('dateModified', rfc822(modified))
        .leaf('ownerName', owner);
      if (user.email !== null && opmlEmail(xmlChars(user.email))) head.leaf('ownerEmail', user.email);
      head.leaf('ownerId', site.paths.userPage(user.username));
      head.el('atom:link', { rel: 'self', type: 'text/x-opml', href: site.paths.url(opml, user.username) });

      const body = root.el('body');
      if (readingList.length === 0) {
        body.el('outline', { text: `${owner} has no feeds in the reading list yet.`, isComment: 'true' });
        return;
      }
      // The reader orders categories by name, uncategorised last; one outline per run of a category.
      let folder: { name: string; element: XmlElement } | null = null;
      for (const entry of readingList) {
        if (entry.category === null) {
          feedOutline(body, entry);
          continue;
        }
        if (folder === null || folder.name !== entry.category) {
          folder = { name: entry.category, element: body.el('outline', { text: entry.category, title: entry.category }) };
        }
        feedOutline(folder.element, entry);
      }
    }, { engine: site.xmlEngine });
  },
};
