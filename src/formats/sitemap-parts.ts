/**
 * The sitemap parts a process rendered last, kept by owner between its builds, so that a part
 * holding a changed owner is spliced: the changed owners' entries are rendered, the others' are
 * taken as they were. `watch` builds again and again in one process; without this, every part
 * holding a changed owner was rendered whole (hundreds of URLs, their change times read from the
 * build state) for the few entries that moved (docs/performance.md, "watch --deploy").
 *
 * A kept part stands for the bytes it makes, no more: the sitemap splices it only when the build
 * state records exactly those bytes for its file (another process's build may have written the
 * file since). Its owners not named by the build's changes are then, as for a part kept whole,
 * those whose entries cannot have moved.
 *
 * Bounded: past `maxChars` characters of kept parts the least recently used parts are dropped (a
 * dropped part is rendered whole the next time, as before).
 */

/** Where one owner's entries (its documents' URLs, then a video's own page) are in a kept part. */
export interface OwnerSpan {
  id: number;
  /** The offset and length of its `<url>` elements in the part's body. */
  at: number;
  length: number;
  /** How many `<url>` elements. */
  urls: number;
  /** An upper bound of their bytes, for the sitemaps.org limit. */
  bytes: number;
}

/** A part as rendered: its text, whether its entries carry `lastmod`, and where each owner's are, by id. */
export interface KeptPart {
  body: string;
  dated: boolean;
  owners: readonly OwnerSpan[];
}

/** 32 Mi characters: some 200 parts of a video site's sitemap, a few of a site of long descriptions. */
const DEFAULT_MAX_CHARS = 32 * 1024 * 1024;

export class SitemapPartCache {
  /** In order of use, the least recent first. */
  private readonly parts = new Map<string, { part: KeptPart; chars: number }>();
  private chars = 0;
  /** Parts spliced, and parts rendered whole, since the cache was made (tests and the bench read them). */
  readonly counts = { spliced: 0, whole: 0 };

  constructor(private readonly maxChars = DEFAULT_MAX_CHARS) {}

  /** The part kept for `file`, taken out: what is rendered from it is kept again. */
  take(file: string): KeptPart | undefined {
    const kept = this.parts.get(file);
    if (kept === undefined) return undefined;
    this.parts.delete(file);
    this.chars -= kept.chars;
    return kept.part;
  }

  keep(file: string, part: KeptPart): void {
    this.take(file);
    const chars = part.body.length;
    if (chars > this.maxChars) return;
    this.parts.set(file, { part, chars });
    this.chars += chars;
    for (const [oldest, { chars: size }] of this.parts) {
      if (this.chars <= this.maxChars) break;
      this.parts.delete(oldest);
      this.chars -= size;
    }
  }
}
