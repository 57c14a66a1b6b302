import type { Format } from './format.js';
import { apml } from './apml.js';
import { atomArchive, rssArchive } from './archives.js';
import { atom } from './atom.js';
import { embedPageFormat } from './embed-page.js';
import { foaf } from './foaf.js';
import { hcard } from './hcard.js';
import { oembed, oembedHtmlFormat, oembedJsonFormat, oembedXmlFormat } from './oembed.js';
import { opml } from './opml.js';
import { recommendations } from './recommendations.js';
import { rss } from './rss.js';
import { SITE_FORMATS } from './site-formats.js';
import { videoHeadFormat } from './video-head.js';
import { xspf } from './xspf.js';

/**
 * The format table: every document vidfeeds publishes. The renderer, the writer, the sitemap, the
 * host configurations and the preview server all read this list; there is no second copy.
 * Adding a format: one file in src/formats/, one line here, one test (docs/architecture.md lists
 * what a descriptor says besides its place: cache class, WebSub topic, upload order, ...).
 */
export const FORMATS: readonly Format[] = [
  // per user
  rss,
  atom,
  rssArchive,
  atomArchive,
  recommendations,
  foaf,
  hcard,
  xspf,
  apml,
  opml,
  // per video
  oembed,
  oembedJsonFormat,
  oembedXmlFormat,
  oembedHtmlFormat,
  embedPageFormat,
  videoHeadFormat,
  // site-wide
  ...SITE_FORMATS,
];

export function formatByName(name: string): Format | undefined {
  return FORMATS.find((f) => f.name === name);
}
