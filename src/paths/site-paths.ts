import type { PageTemplates } from '../config/site-config.js';
import { encodedFilePath, isSiteFileName, keyedFile, keyedUrlPath, pageNumber, keyProblem, type KeyedPlace, type Place, type SitePlace } from './url-scheme.js';

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
  /** Host name of the base URL, e.g. `example.org` (what the Atom feeds' tag URIs are minted under). */
  readonly hostname: string;
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
    const url = new URL(this.base);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.hostname = url.hostname;
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
  file(place: KeyedPlace, key: string, page?: number): string {
    return keyedFile(place, key, page);
  }

  /** Public URL of a user's or video's document (of its page `page`, for a paged place). */
  url(place: Pick<KeyedPlace, 'dir' | 'urlName' | 'paged'>, key: string, page?: number): string {
    return `${this.base}/${keyedUrlPath(place, encodeURIComponent(key), page)}`;
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
      const format = this.ownerFormats.find((f) => f.paged === undefined && f.dir === dir && f.file === file);
      if (format !== undefined) return this.url(format, key!);
    }
    const page = rest.length === 2 ? pageNumber(rest[0]!) : null;
    if (page !== null) {
      const format = this.ownerFormats.find((f) => f.paged === file && f.dir === dir && f.file === rest[1]);
      if (format !== undefined) return this.url(format, key!, page);
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
   * parameter. A consumer may send the page URL in any form that names the same page: http or
   * https (sites answer on both), with or without the final slash, any percent-encoding of the same
   * characters (`%7e` or `~`, `%C3%A9` or `é`), any letter case of the host, a default port, a
   * fragment, and query parameters the page template does not name. Anything else gives null.
   */
  videoIdOfPage(pageUrl: string): string | null {
    let url: URL;
    try {
      url = new URL(pageUrl.trim());
    } catch {
      return null;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    const page = this.videoPageTemplate;
    if (page === null || url.host !== page.host) return null;
    const found: string[] = [];
    const given = pathSegments(url.pathname);
    if (given === null || given.length !== page.segments.length) return null;
    for (const [i, segment] of page.segments.entries()) {
      if (!matchPart(segment, given[i]!, found)) return null;
    }
    for (const [name, value] of page.query) {
      const values = url.searchParams.getAll(name);
      if (values.length !== 1 || !matchPart(value, values[0]!, found)) return null;
    }
    // The id is one value, however many times the template names it.
    if (found.length === 0 || found.some((id) => id !== found[0] || id === '')) return null;
    return found[0]!;
  }

  /** The video page template as parts to match a URL against (see `videoIdOfPage`), or null if it cannot be inverted. */
  private get videoPageTemplate(): VideoPageTemplate | null {
    if (this.parsedVideoPage === undefined) this.parsedVideoPage = parseVideoPageTemplate(this.pages.video.replaceAll('{base}', this.base));
    return this.parsedVideoPage;
  }

  private parsedVideoPage: VideoPageTemplate | null | undefined;

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

/** The placeholder of a video page template, as it stands after URL parsing (letters only, so nothing encodes it). */
const VIDEO_SLOT = 'VIDFEEDSVIDEOSLOT';

/** A decoded part of a video page template: literal text, or text around the video id. */
type TemplatePart = { literal: string } | { before: string; after: string };

interface VideoPageTemplate {
  /** host[:port], as URL gives it (lower case, no default port). */
  host: string;
  /** Decoded path segments, the final empty one (a final slash) left out. */
  segments: TemplatePart[];
  /** Query parameters the template names, by name. */
  query: Array<[string, TemplatePart]>;
}

function templatePart(decoded: string): TemplatePart {
  const at = decoded.indexOf(VIDEO_SLOT);
  if (at === -1) return { literal: decoded };
  return { before: decoded.slice(0, at), after: decoded.slice(at + VIDEO_SLOT.length).replaceAll(VIDEO_SLOT, '') };
}

function parseVideoPageTemplate(template: string): VideoPageTemplate | null {
  let url: URL;
  try {
    url = new URL(template.replaceAll('{video}', VIDEO_SLOT));
  } catch {
    return null;
  }
  // A template with the id in its host cannot be matched segment by segment.
  if (url.host.toUpperCase().includes(VIDEO_SLOT)) return null;
  const segments = pathSegments(url.pathname);
  if (segments === null) return null;
  return { host: url.host, segments: segments.map(templatePart), query: [...url.searchParams].map(([name, value]) => [name, templatePart(value)]) };
}

/** A URL path as decoded segments, without the final empty one; null when a segment does not decode. */
function pathSegments(pathname: string): string[] | null {
  const raw = pathname.split('/').slice(1);
  if (raw.length > 1 && raw[raw.length - 1] === '') raw.pop();
  try {
    return raw.map((segment) => decodeURIComponent(segment));
  } catch {
    return null;
  }
}

/** Whether a decoded value matches a template part; the id it holds goes into `found`. */
function matchPart(part: TemplatePart, value: string, found: string[]): boolean {
  if ('literal' in part) return part.literal === value;
  if (value.length < part.before.length + part.after.length || !value.startsWith(part.before) || !value.endsWith(part.after)) return false;
  found.push(value.slice(part.before.length, value.length - part.after.length));
  return true;
}
