/**
 * Where the RFC 5005 archive pages of the feeds live (src/formats/archives.ts renders them), apart
 * from their renderers so that the feeds can link to their newest page without importing them.
 *
 * `/<user>/rss/archive/<N>/` and `/<user>/atom/archive/<N>/`, N from 0 (the oldest).
 */

/** Rows per archive page. Changing it moves every row to another page: every archive is rewritten. */
export const ARCHIVE_PAGE_SIZE = 100;

/** The folder, below the feed's, that holds the numbered pages. */
const ARCHIVE_SEGMENT = 'archive';

export const RSS_ARCHIVE_PLACE = { dir: 'rss', paged: ARCHIVE_SEGMENT, file: 'index.rss', urlName: '' } as const;
export const ATOM_ARCHIVE_PLACE = { dir: 'atom', paged: ARCHIVE_SEGMENT, file: 'index.atom', urlName: '' } as const;

/** How many pages hold `rows` archived rows. */
export function archivePageCount(rows: number): number {
  return Math.ceil(rows / ARCHIVE_PAGE_SIZE);
}

/** The RFC 5005 history namespace (`fh:archive`). */
export const FH_NS = 'http://purl.org/syndication/history/1.0';
