import type { SiteContext, UserFormat } from './format.js';
import { atom } from './atom.js';
import { foaf } from './foaf.js';
import { opensearch } from './opensearch.js';
import { rss } from './rss.js';
import type { UserBundle } from '../model/views.js';
import { loadTemplate } from '../render/templates.js';
import { mailtoUri } from '../render/urls.js';
import { xmlChars } from '../render/xml-text.js';

/**
 * hCard (seed 2.4): an HTML page whose `vcard` div carries the user's name, profile link, photo,
 * and the address, phone and e-mail address the user chose to show. Every element carries both
 * the classic hCard classes and the microformats2 ones (`vcard h-card`, `fn p-name`, ...), so
 * either kind of parser reads it. The markup is templates/hcard/hcard.hbs.
 *
 * Difference from the seed: the name is `fn`, not `fn org`, because in hCard an `fn` equal to the
 * `org` declares the card to be an organisation's, and these cards are people's.
 *
 * The head links what a browser, a feed reader or a crawler discovers from a profile page: the
 * user's RSS and Atom feeds (`rel="alternate"`), FOAF (`rel="alternate"`, titled `FOAF`, as FOAF
 * autodiscovery reads it) and the site's OpenSearch description (`rel="search"`).
 */

/** What the template sees. Text is plain (the template escapes it); URLs are absolute http(s) or mailto. */
export interface HcardView {
  language: string;
  siteName: string;
  name: string;
  username: string;
  profileUrl: string;
  foafUrl: string;
  rssUrl: string;
  atomUrl: string;
  /** The site's opensearch.xml. */
  searchUrl: string;
  photoUrl: string | null;
  /** The structured name, when any part of it is known. */
  n: { title: string; givenName: string; familyName: string } | null;
  address: { streetAddress: string; locality: string; region: string; regionName: string; postalCode: string; countryName: string } | null;
  /** Whether there is a phone or an e-mail address to show. */
  telecommunications: boolean;
  phone: { text: string } | null;
  email: { text: string; uri: string } | null;
}

const SAMPLE: HcardView = {
  language: 'en',
  siteName: 'Sample <site>',
  name: 'Sample "name" & <b>',
  username: 'sample',
  profileUrl: 'https://example.org/sample/',
  foafUrl: 'https://example.org/sample/foaf/',
  rssUrl: 'https://example.org/sample/rss/',
  atomUrl: 'https://example.org/sample/atom/',
  searchUrl: 'https://example.org/opensearch.xml',
  photoUrl: 'https://example.org/sample.jpg',
  n: { title: 'Dr', givenName: 'Sample', familyName: 'Name' },
  address: { streetAddress: '1 Main St', locality: 'Springfield', region: 'IL', regionName: 'Illinois', postalCode: '62701', countryName: 'USA' },
  telecommunications: true,
  phone: { text: '+1-555-0100' },
  email: { text: 'sample@example.org', uri: 'mailto:sample@example.org' },
};

/**
 * Loaded and checked once, when this module loads, from the templates that ship with vidfeeds:
 * `render` must not touch the disk, and the page's classes are the format's contract (a site's
 * own template could silently break what parsers read), so there is no per-site override yet.
 * A missing or broken template stops vidfeeds at start, before any file is written.
 */
const { template: page } = loadTemplate('hcard', 'hcard', null, SAMPLE);

/** Text as an HTML page can carry it: no C0/C1 control characters, lone surrogates or non-characters. */
function htmlText(text: string): string {
  return xmlChars(text).replace(/[\u007f-\u009f]/g, '');
}

export function hcardView({ user }: UserBundle, site: SiteContext): HcardView {
  const address = user.address;
  const n = { title: htmlText(user.title), givenName: htmlText(user.givenName), familyName: htmlText(user.familyName) };
  const phone = user.phone === null ? null : { text: htmlText(user.phone) };
  const email = user.email === null ? null : { text: htmlText(user.email), uri: mailtoUri(htmlText(user.email)) };
  return {
    language: site.config.language,
    siteName: htmlText(site.config.siteName),
    // Blank once cleaned for HTML (C1 controls too), the display name gives way to the username.
    name: htmlText(user.displayName).trim() === '' ? user.username : htmlText(user.displayName),
    username: user.username,
    profileUrl: site.paths.userPage(user.username),
    foafUrl: site.paths.url(foaf, user.username),
    rssUrl: site.paths.url(rss, user.username),
    atomUrl: site.paths.url(atom, user.username),
    searchUrl: site.paths.siteUrl(opensearch.file),
    photoUrl: user.avatarUrl,
    n: n.title || n.givenName || n.familyName ? n : null,
    address:
      address === null
        ? null
        : {
            streetAddress: htmlText(address.streetAddress),
            locality: htmlText(address.locality),
            region: htmlText(address.region),
            regionName: htmlText(address.regionName),
            postalCode: htmlText(address.postalCode),
            countryName: htmlText(address.countryName),
          },
    telecommunications: phone !== null || email !== null,
    phone,
    email,
  };
}

export const hcard: UserFormat = {
  name: 'hcard',
  scope: 'user',
  dir: 'hcard',
  file: 'index.html',
  urlName: '',
  mediaType: 'text/html; charset=utf-8',
  inSitemap: true,
  summary: "hCard page (classic hCard and microformats2) of the user's shown contact details",
  cacheClass: 'profiles',
  needs: [],

  render(bundle: UserBundle, site: SiteContext): string {
    return page(hcardView(bundle, site));
  },
};
