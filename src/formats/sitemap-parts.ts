/**
 * Where each owner's entries are in the sitemap parts a process rendered, kept between its
 * builds, so that a part holding a changed owner is spliced: the changed owners' entries are
 * rendered, the others' are taken from the part's file as they are. `watch` builds again and
 * again in one process, and a part rendered whole costs hundreds of URLs and their change times,
 * read from the build state, for the few entries that moved.
 *
 * Only the layout is kept, not the text (a 10,000-user site's parts are 37 MB, more than watch's
 * whole memory budget leaves): the hash of the part's bytes as rendered, and per owner its id, where
 * its `<url>` elements are in the part's text, how many, and an upper bound of their bytes. A part
 * is spliced only when its file on disk is what the build state records and has that hash
 * (sitemap-ranges.ts), so the layout is that of the bytes it is cut from.
 *
 * Bounded: past `maxBytes` of layouts (some 8 KB for a part of 200 owners) the least recently
 * used parts are dropped; a dropped part is rendered whole the next time one of its owners changes.
 */

/** Numbers per owner in `KeptPart.owners`: id, offset and length (in characters of the part's text), URLs, bytes. */
export const OWNER_FIELDS = 5;

export interface KeptPart {
  /** The document hash (src/render/document-hash.ts) of the part's bytes as rendered. */
  hash: Buffer;
  /** Whether its entries carry `lastmod`. */
  dated: boolean;
  /** `OWNER_FIELDS` numbers per owner, by id. */
  owners: Float64Array;
}

/** 8 MiB of layouts: a thousand parts of 200 owners, every part of a 25,000-user site. */
const DEFAULT_MAX_BYTES = 8 * 1024 * 1024;

export class SitemapPartCache {
  /** In order of use, the least recent first. */
  private readonly parts = new Map<string, KeptPart>();
  private bytes = 0;
  /** Parts spliced, and parts rendered whole, since the cache was made (tests and the bench read them). */
  readonly counts = { spliced: 0, whole: 0 };

  constructor(private readonly maxBytes = DEFAULT_MAX_BYTES) {}

  /** The layout kept for `file`, taken out: what is rendered from it is kept again. */
  take(file: string): KeptPart | undefined {
    const kept = this.parts.get(file);
    if (kept === undefined) return undefined;
    this.parts.delete(file);
    this.bytes -= kept.owners.byteLength;
    return kept;
  }

  keep(file: string, part: KeptPart): void {
    this.take(file);
    if (part.owners.byteLength > this.maxBytes) return;
    this.parts.set(file, part);
    this.bytes += part.owners.byteLength;
    for (const [oldest, { owners }] of this.parts) {
      if (this.bytes <= this.maxBytes) break;
      this.parts.delete(oldest);
      this.bytes -= owners.byteLength;
    }
  }
}
