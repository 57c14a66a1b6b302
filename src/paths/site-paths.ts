import type { PageTemplates } from '../config/site-config.js';
import { encodedFilePath, isSiteFileName, keyedFile, keyedUrlPath, keyProblem, type KeyedPlace, type Place, type SitePlace } from './url-scheme.js';

/** Tag pages a SitePaths keeps (see tagPage). */
const TAG_PAGES_KEPT = 4096;

/**
 * The URL scheme (src/paths/url-scheme.ts) bound to one site's base URL: turns (format, key) into
 * the public URL and the file under out/, and fills the site's own page templates into links.
 */
export class SitePaths {
  /** Base URL without a trailing slash, e.g. `https://example.org/videos`. */
  readonly base: string;
  /** Path part of the base URL, e.g. `/videos` (empty at the root). */
  readonly basePath: string;
  private readonly siteFiles: readonly SitePlace[];
  private readonly ownerFormats: readonly KeyedPlace[];
  /** Each page template with `{base}` filled in, split at its one placeholder: a link is then one join (feeds make many). */
  private readonly pageParts: { user: string[]; video: string[]; group: string[]; tag: string[] };

  constructor(
    baseUrl: string,
    private readonly pages: PageTemplates,
    places: readonly Place[],
  ) {
    this.base = baseUrl.replace(/\/+$/, '');
    this.basePath = new URL(this.base).pathname.replace(/\/+$/, '');
    this.siteFiles = places.filter((p): p is SitePlace => p.scope === 'site');
    this.ownerFormats = places.filter((p): p is KeyedPlace => p.scope !== 'site');
    const split = (template: string, placeholder: string) => template.replaceAll('{base}', this.base).split(placeholder);
    this.pageParts = {
      user: split(pages.user, '{user}'),
      video: split(pages.video, '{video}'),
      group: split(pages.group, '{group}'),
      tag: split(pages.tag, '{tag}'),
    };
  }

  /** Relative path under out/ of a user's or video's document. Only for keys that passed `problem`. */
  file(place: KeyedPlace, key: string): string {
    return keyedFile(place, key);
  }

  /** Public URL of a user's or video's document. */
  url(place: Pick<KeyedPlace, 'dir' | 'urlName'>, key: string): string {
    return `${this.base}/${keyedUrlPath(place, encodeURIComponent(key))}`;
  }

  /** Public URL of a site-wide file. */
  siteUrl(file: string): string {
    return `${this.base}/${file}`;
  }

  /** The site's home page: the base URL with its trailing slash (`https://example.org/videos/`). */
  home(): string {
    return `${this.base}/`;
  }

  /**
   * The public URL a file under out/ is served at (a directory index by its directory's URL), for
   * a CDN purge: the inverse of `file` and of the site files' names.
   */
  urlOfFile(relativeFile: string): string {
    const [key, dir, file, ...rest] = relativeFile.split('/');
    if (rest.length === 0 && file !== undefined) {
      const format = this.ownerFormats.find((f) => f.dir === dir && f.file === file);
      if (format !== undefined) return this.url(format, key!);
    }
    return `${this.base}/${encodedFilePath(relativeFile)}`;
  }

  /** Whether `dir` is the folder a user's or video's documents of some format go into (`rss`, `oembed`). */
  isFormatDir(dir: string): boolean {
    return this.ownerFormats.some((f) => f.dir === dir);
  }

  /** URL path (no scheme or host) of a file under out/, as a server sees the request. */
  urlPathOfFile(relativeFile: string): string {
    return `${this.basePath}/${encodedFilePath(relativeFile)}`;
  }

  /** Why a username or video id cannot be published, or null: the one rule (`keyProblem`). */
  problem(key: string): string | null {
    return keyProblem(key, this.siteFiles);
  }

  /** Names that site-wide files take at the top of the tree. */
  isReserved(name: string): boolean {
    return isSiteFileName(name, this.siteFiles);
  }

  userPage(username: string): string {
    // A feed links its one uploader on every item: the last answer is kept.
    if (username !== this.lastUser.username) this.lastUser = { username, page: this.pageParts.user.join(encodeURIComponent(username)) };
    return this.lastUser.page;
  }

  private lastUser = { username: '', page: '' };

  videoPage(publicId: string): string {
    return this.pageParts.video.join(encodeURIComponent(publicId));
  }

  /**
   * The video id of one of the site's video pages: the inverse of `videoPage`, for oEmbed's `url`
   * parameter. The scheme may differ (sites answer on http and https), a fragment is ignored, and
   * so is a query when the page template has none. Anything else gives null.
   */
  videoIdOfPage(pageUrl: string): string | null {
    let url: URL;
    try {
      url = new URL(pageUrl);
    } catch {
      return null;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    const template = this.pages.video.replaceAll('{base}', this.base);
    const at = template.indexOf('{video}');
    const templateUrl = new URL(template.replaceAll('{video}', 'x'));
    url.hash = '';
    if (templateUrl.search === '') url.search = '';
    url.protocol = templateUrl.protocol;
    const normal = url.href;
    const prefix = new URL(template.slice(0, at) + 'x').href.slice(0, -1);
    const suffix = template.slice(at + '{video}'.length).replaceAll('{video}', '');
    if (!normal.startsWith(prefix) || !normal.endsWith(suffix) || normal.length < prefix.length + suffix.length + 1) return null;
    const raw = normal.slice(prefix.length, normal.length - suffix.length);
    // The id is one segment: a raw `/`, `?` or `#` means another page of the site.
    if (/[/?#]/.test(raw)) return null;
    try {
      return decodeURIComponent(raw);
    } catch {
      return null;
    }
  }

  groupPage(slug: string): string {
    return this.pageParts.group.join(encodeURIComponent(slug));
  }

  tagPage(tag: string): string {
    // Tags repeat from video to video: their pages are kept, a bounded number.
    let page = this.tagPages.get(tag);
    if (page === undefined) {
      if (this.tagPages.size >= TAG_PAGES_KEPT) this.tagPages.clear();
      page = this.pageParts.tag.join(encodeURIComponent(tag));
      this.tagPages.set(tag, page);
    }
    return page;
  }

  private readonly tagPages = new Map<string, string>();

  /** The OpenSearch URL template: `{searchTerms}` stays for the client to fill. */
  searchTemplate(): string {
    return this.pages.search.replaceAll('{base}', this.base);
  }
}
