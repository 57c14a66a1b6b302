import { compressedFormOf } from '../build/compression.js';
import { posix } from 'node:path';
import type { PageTemplates } from '../config/config.js';
import type { Format, SiteFormat, UserFormat, VideoFormat } from '../formats/format.js';
import { segmentProblem } from './names.js';

/**
 * The one source of truth for URLs and paths: turns (format, key) into the public URL and the
 * file under out/, and the site's own page templates into links.
 */
export class SitePaths {
  /** Base URL without a trailing slash, e.g. `https://example.org/videos`. */
  readonly base: string;
  /** Path part of the base URL, e.g. `/videos` (empty at the root). */
  readonly basePath: string;
  private readonly siteFiles: readonly SiteFormat[];
  private readonly ownerFormats: readonly (UserFormat | VideoFormat)[];

  constructor(
    baseUrl: string,
    private readonly pages: PageTemplates,
    formats: readonly Format[],
  ) {
    this.base = baseUrl.replace(/\/+$/, '');
    this.basePath = new URL(this.base).pathname.replace(/\/+$/, '');
    this.siteFiles = formats.filter((f): f is SiteFormat => f.scope === 'site');
    this.ownerFormats = formats.filter((f): f is UserFormat | VideoFormat => f.scope !== 'site');
  }

  /** Relative path under out/ of a user's or video's document. Only for keys that passed `problem`. */
  file(format: UserFormat | VideoFormat, key: string): string {
    return `${key}/${format.dir}/${format.file}`;
  }

  /** Public URL of a user's or video's document. */
  url(format: Pick<UserFormat | VideoFormat, 'dir' | 'urlName'>, key: string): string {
    return `${this.base}/${encodeURIComponent(key)}/${format.dir}/${format.urlName}`;
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
    return `${this.base}/${relativeFile.split('/').map(encodeURIComponent).join('/')}`;
  }

  /** Whether `dir` is the folder a user's or video's documents of some format go into (`rss`, `oembed`). */
  isFormatDir(dir: string): boolean {
    return this.ownerFormats.some((f) => f.dir === dir);
  }

  /** URL path (no scheme or host) of a file under out/, as a server sees the request. */
  urlPathOfFile(relativeFile: string): string {
    return `${this.basePath}/${relativeFile.split('/').map(encodeURIComponent).join('/')}`;
  }

  /** Why a username or video id cannot be a path segment, or null. */
  problem(key: string): string | null {
    return segmentProblem(key, (name) => this.isReserved(name));
  }

  /** Names that site-wide files take at the top of the tree. */
  isReserved(name: string): boolean {
    return isSiteFileName(name, this.siteFiles);
  }

  userPage(username: string): string {
    return this.fill(this.pages.user, { user: username });
  }

  videoPage(publicId: string): string {
    return this.fill(this.pages.video, { video: publicId });
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
    return this.fill(this.pages.group, { group: slug });
  }

  tagPage(tag: string): string {
    return this.fill(this.pages.tag, { tag });
  }

  /** The OpenSearch URL template: `{searchTerms}` stays for the client to fill. */
  searchTemplate(): string {
    return this.pages.search.replaceAll('{base}', this.base);
  }

  private fill(template: string, values: Record<string, string>): string {
    let out = template.replaceAll('{base}', this.base);
    for (const [name, value] of Object.entries(values)) out = out.replaceAll(`{${name}}`, encodeURIComponent(value));
    return out;
  }
}

/**
 * Whether `name` is taken at the top of the tree by one of the site-wide `formats`, or by a
 * pre-compressed form of one (`robots.txt.gz`): reserved whether or not the configuration writes
 * forms, so which names are published never depends on `compress`.
 */
export function isSiteFileName(name: string, formats: readonly Format[]): boolean {
  const lower = name.toLowerCase();
  const taken = (file: string) => formats.some((f) => f.scope === 'site' && (f.file.toLowerCase() === file || (f.alsoWrites?.test(file) ?? false)));
  const form = compressedFormOf(lower);
  return taken(lower) || (form !== null && taken(form.document));
}

/**
 * Checks the format table itself: no two formats may claim one file or one URL. Runs before a build
 * writes anything, naming both formats.
 */
export function checkFormatTable(formats: readonly Format[]): void {
  const seenFile = new Map<string, string>();
  const seenName = new Map<string, string>();
  for (const format of formats) {
    if (seenName.has(format.name)) throw new Error(`format table: two formats are named ${format.name}`);
    seenName.set(format.name, format.name);
    const claims =
      format.scope === 'site'
        ? [`file ${format.file}`, `url ${format.file}`]
        : [`file <key>/${format.dir}/${format.file}`, `url <key>/${format.dir}/${format.urlName}`];
    for (const claim of claims) {
      const normal = posix.normalize(claim);
      const other = seenFile.get(normal);
      // A directory index URL and its file legitimately coincide within one format.
      if (other !== undefined && other !== format.name) {
        throw new Error(`format table: ${format.name} and ${other} both claim ${claim}`);
      }
      seenFile.set(normal, format.name);
    }
  }
}
