/**
 * Where the RFC 5005 archive pages of the feeds live (src/formats/archives.ts renders them), apart
 * from their renderers so that the feeds can link to their newest page without importing them.
 *
 * `/<user>/rss/archive/<N>/` and `/<user>/atom/archive/<N>/`, in the files
 * `<user>/rss/archive/<N>/page.rss` and `<user>/atom/archive/<N>/page.atom`; N is a page's number,
 * the id of its newest row (`planArchivePages`).
 */

/** The folder, below the feed's, that holds the numbered pages. */
const ARCHIVE_SEGMENT = 'archive';

// Files named apart from the feeds' own (index.rss, index.atom): a host that sets headers by file
// name (Apache's <Files>) can then give the archives a Cache-Control of their own.
export const RSS_ARCHIVE_PLACE = { dir: 'rss', paged: ARCHIVE_SEGMENT, file: 'page.rss', urlName: '' } as const;
export const ATOM_ARCHIVE_PLACE = { dir: 'atom', paged: ARCHIVE_SEGMENT, file: 'page.atom', urlName: '' } as const;

/** Rows a page holds on average: one row in this many starts a page (`startsPage`). */
const PAGE_ROWS = 100;
/** The most rows a page holds before the next row with a usable id starts another, whatever the ids. */
const PAGE_MAX_ROWS = 4 * PAGE_ROWS;

/** One archive page: its number (the URL's N) and how many rows of the list it holds. */
export interface ArchivePagePlan {
  readonly number: number;
  readonly rows: number;
}

/**
 * The pages of an archived list, oldest first, from the ids of its rows oldest first. A row
 * starts a page when its id says so (`startsPage`), whatever the rows around it, so removing
 * or adding a row changes the page that holds it and no other. A page that reaches PAGE_MAX_ROWS
 * ends at the next row with a usable id, so ids that seldom start a page still give pages of
 * bounded size; a removal from such a page moves that cut, and so changes the pages up to the
 * next row whose id starts one (rare: it takes 400 rows in a row none of whose ids starts a page).
 *
 * A page is numbered by the id of its newest row (the row nearest the feed), so that a URL only
 * ever names the page whose newest row is that one, and an archive document's entries do not
 * change under its URL (RFC 5005 section 4): a reader that stops walking `prev-archive` at a page
 * it has read (section 4.2) misses nothing. A page keeps its number when the next page starts;
 * the newest page takes a new one whenever its newest end moves (an upload pushes the feed's
 * oldest row onto it, a deletion from the feed pulls one back), as does a page whose newest row
 * goes. A row whose id is not usable (`usableId`) names no page: the page is numbered by its
 * newest row that has a usable id; only the oldest page can hold no such row (every other starts
 * at one), and it is page 0.
 */
export function planArchivePages(ids: readonly number[]): ArchivePagePlan[] {
  const pages: Array<{ number: number; rows: number }> = [];
  let page = { number: 0, rows: 0 };
  for (const id of ids) {
    const usable = usableId(id);
    if (usable && page.rows > 0 && (startsPage(id) || page.rows >= PAGE_MAX_ROWS)) {
      pages.push(page);
      page = { number: 0, rows: 0 };
    }
    if (usable) page.number = id;
    page.rows++;
  }
  if (page.rows > 0) pages.push(page);
  return pages;
}

/** Whether an id can start and name a page: a positive safe integer (a URL's N, PAGE_NUMBER). */
function usableId(id: number): boolean {
  return Number.isSafeInteger(id) && id > 0;
}

/** The number of the newest page of an archived list (null when the list is empty). */
export function newestArchivePage(ids: readonly number[]): number | null {
  return planArchivePages(ids).at(-1)?.number ?? null;
}

/**
 * Whether the row with this id starts an archive page: one id in PAGE_ROWS, spread by a mixing
 * function (MurmurHash3's 32-bit finaliser over both halves of the id), so that ids handed out
 * in order, or in steps, still start pages at the same rate.
 */
function startsPage(id: number): boolean {
  let h = (id % 0x1_0000_0000) ^ Math.floor(id / 0x1_0000_0000);
  h = Math.imul(h ^ (h >>> 16), 0x85eb_ca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2_ae35);
  h ^= h >>> 16;
  return (h >>> 0) % PAGE_ROWS === 0;
}

/** The RFC 5005 history namespace (`fh:archive`). */
export const FH_NS = 'http://purl.org/syndication/history/1.0';
