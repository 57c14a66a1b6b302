/**
 * Where the RFC 5005 archive pages of the feeds live (src/formats/archives.ts renders them), apart
 * from their renderers so that the feeds can link to their newest page without importing them.
 *
 * `/<user>/rss/archive/<N>/` and `/<user>/atom/archive/<N>/`, N from 0 (the oldest), in the files
 * `<user>/rss/archive/<N>/page.rss` and `<user>/atom/archive/<N>/page.atom`.
 */

/** Rows per archive page. Changing it moves every row to another page: every archive is rewritten. */
export const ARCHIVE_PAGE_SIZE = 100;

/** The folder, below the feed's, that holds the numbered pages. */
const ARCHIVE_SEGMENT = 'archive';

// Files named apart from the feeds' own (index.rss, index.atom): a host that sets headers by file
// name (Apache's <Files>) can then give the archives a Cache-Control of their own.
export const RSS_ARCHIVE_PLACE = { dir: 'rss', paged: ARCHIVE_SEGMENT, file: 'page.rss', urlName: '' } as const;
export const ATOM_ARCHIVE_PLACE = { dir: 'atom', paged: ARCHIVE_SEGMENT, file: 'page.atom', urlName: '' } as const;

/** How many pages hold `rows` archived rows. */
export function archivePageCount(rows: number): number {
  return Math.ceil(rows / ARCHIVE_PAGE_SIZE);
}

/** The RFC 5005 history namespace (`fh:archive`). */
export const FH_NS = 'http://purl.org/syndication/history/1.0';
