import type { Format } from '../formats/format.js';
import type { SitePaths } from '../paths/site-paths.js';
import { websubLink } from './manifest.js';
import type { RouteMatch } from './routes.js';

/**
 * WebSub (W3C Recommendation, 2018): a feed names its hubs and its own URL, in the document
 * (`atom:link rel="hub"` / `rel="self"`, src/formats/rss.ts and atom.ts) and in `Link` headers,
 * and its publisher tells the hubs when its bytes change (src/deploy/notify.ts). The documents
 * that are WebSub topics, the feeds readers subscribe to, say so in their descriptor
 * (`websubTopic`).
 */
export function isWebSubTopic(format: Pick<Format, 'websubTopic'>): boolean {
  return format.websubTopic === true;
}

/** The `Link` header of a file of the tree under a list of hubs: a feed's hubs and self URL, or nothing. */
export function websubLinkOfMatch(hubs: readonly string[], paths: SitePaths, match: RouteMatch): string | undefined {
  if (hubs.length === 0 || match.kind !== 'keyed' || !isWebSubTopic(match.format)) return undefined;
  return websubLink(hubs, paths.url(match.format, match.key));
}
