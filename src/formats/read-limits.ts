import { ATOM_ENTRIES } from './atom.js';
import { RSS_ITEMS } from './rss.js';

/**
 * How many rows of a user's lists the documents publish, and so how many the site reader reads
 * (src/db/reader-statements.ts, `ReaderLimits`): the RSS feed's uploads, the Atom feed's groups,
 * and the recommendations document's length, which the configuration (or a request) sets. The
 * formats own these numbers; whoever opens a reader passes them in, so the read layer depends on
 * no format.
 */
export function readLimits(recommendations: number): { uploads: number; groups: number; recommendations: number } {
  return { uploads: RSS_ITEMS, groups: ATOM_ENTRIES, recommendations };
}
