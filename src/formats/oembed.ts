import type { SiteContext, VideoFormat } from './format.js';
import type { VideoView } from '../model/views.js';
import type { SitePaths } from '../paths/site-paths.js';
import { embedPageFormat } from './embed-page.js';
import { scriptSafeJson } from '../render/script-json.js';
import { xmlDocument } from '../render/xml.js';
import type { XmlEngine } from '../render/xml-engine.js';
import { escapeAttr, videoName, xmlChars } from '../render/xml-text.js';

/**
 * oEmbed 1.0 for every public video (seed 2.2), in four forms at four paths:
 *   /<video>/oembed/      JSON, the default (the form every oEmbed consumer reads)
 *   /<video>/oembed/json  JSON
 *   /<video>/oembed/xml   XML
 *   /<video>/oembed/html  the `html` field, bare: an <iframe> of the embed page (embed-page.ts),
 *                         or with `oembed.html: "inline"` the embed template's player markup
 * One function builds the response object; each form is a thin serialiser of it, so the forms
 * agree on every field by construction. `vidfeeds serve` calls the same functions for requests
 * with `maxwidth`/`maxheight`.
 *
 * Differences from the seed (docs/oembed.md): sizes are JSON numbers; the thumbnail's URL, width
 * and height go together in every form; the seed's `provider` is oEmbed's `provider_name`; the
 * seed's `url` (the video page) is the extension field `web_page`, because oEmbed 1.0 reserves
 * `url` for the image of a photo response and its schema refuses it in a video response.
 */

export interface OembedOptions {
  maxwidth?: number;
  maxheight?: number;
}

interface OembedFields {
  version: '1.0';
  type: 'video';
  width: number;
  height: number;
  title: string;
  /** The video's page on the site (the seed's `url`). */
  web_page: string;
  author_name: string;
  author_url: string;
  provider_name: string;
  provider_url: string;
  /** Suggested cache lifetime in seconds; the static documents leave it out (see docs/oembed.md). */
  cache_age?: number;
  html: string;
}

/** The thumbnail fields come all three or not at all (oEmbed 1.0 section 2.3.4). */
type ThumbnailFields =
  | { thumbnail_url: string; thumbnail_width: number; thumbnail_height: number }
  | { thumbnail_url?: never; thumbnail_width?: never; thumbnail_height?: never };

/** An oEmbed response, with oEmbed's field names. */
export type OembedResponse = OembedFields & ThumbnailFields;

/** The fields in the order every form writes them (the seed's order). */
const FIELD_ORDER = [
  'version',
  'type',
  'width',
  'height',
  'title',
  'thumbnail_url',
  'thumbnail_width',
  'thumbnail_height',
  'web_page',
  'author_name',
  'author_url',
  'provider_name',
  'provider_url',
  'cache_age',
  'html',
] as const satisfies ReadonlyArray<keyof OembedFields | keyof ThumbnailFields>;

/**
 * Fits the player into the consumer's maximum size: scaled down keeping its aspect ratio, never up.
 * The scaled side is rounded down, so the result never exceeds a maximum, and is at least 1.
 */
export function fitPlayer(size: { width: number; height: number }, options: OembedOptions = {}): { width: number; height: number } {
  let { width, height } = size;
  const { maxwidth, maxheight } = options;
  if (maxwidth !== undefined && width > maxwidth) {
    height = Math.max(1, Math.floor((height * maxwidth) / width));
    width = maxwidth;
  }
  if (maxheight !== undefined && height > maxheight) {
    width = Math.max(1, Math.floor((width * maxheight) / height));
    height = maxheight;
  }
  return { width, height };
}

function checkOptions(options: OembedOptions): void {
  for (const name of ['maxwidth', 'maxheight'] as const) {
    const value = options[name];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) {
      throw new RangeError(`oEmbed ${name} must be a whole number of pixels from 1 up, not ${String(value)}`);
    }
  }
}

/**
 * The oEmbed response of a public video. `options.maxwidth`/`maxheight` shrink the player (see
 * `fitPlayer`); a thumbnail larger than they allow is left out, since oEmbed 1.0 requires the
 * thumbnail to respect them and we have no smaller one. Text goes through `xmlChars` (forbidden
 * characters removed, line ends as XML parsers report them), so the JSON and XML forms carry the
 * same values.
 */
export function oembedResponse(video: VideoView, site: SiteContext, options: OembedOptions = {}): OembedResponse {
  checkOptions(options);
  const { width, height } = fitPlayer(site.config.player, options);
  const thumbnailFits =
    (options.maxwidth === undefined || video.thumbnailWidth <= options.maxwidth) &&
    (options.maxheight === undefined || video.thumbnailHeight <= options.maxheight);
  const thumbnail: ThumbnailFields = thumbnailFits
    ? { thumbnail_url: video.thumbnailUrl, thumbnail_width: video.thumbnailWidth, thumbnail_height: video.thumbnailHeight }
    : {};
  return {
    version: '1.0',
    type: 'video',
    width,
    height,
    title: xmlChars(video.title),
    ...thumbnail,
    web_page: site.paths.videoPage(video.publicId),
    author_name: xmlChars(video.uploader.username),
    author_url: site.paths.userPage(video.uploader.username),
    provider_name: xmlChars(site.config.siteName),
    provider_url: site.paths.home(),
    html: site.config.oembed.html === 'inline' ? site.embed.render(video, { width, height }) : embedIframe(video, site, { width, height }),
  };
}

/**
 * The `html` field by default: an `<iframe>` of the video's embed page at the response's size, as
 * the providers that embed well answer. WordPress keeps only an iframe (with `src`, `width`,
 * `height`, `title`, `frameborder`) from a provider it does not list, and adds its own sandbox;
 * the `title` names the frame for assistive technology. `frameborder="0"` is obsolete in HTML
 * but the one border switch such consumers keep (they strip `style`).
 */
export function embedIframe(video: VideoView, site: SiteContext, size: { width: number; height: number }): string {
  const src = site.paths.url(embedPageFormat, video.publicId);
  return (
    `<iframe src="${escapeAttr(src)}" width="${size.width}" height="${size.height}" title="${escapeAttr(xmlChars(videoName(video)))}"` +
    ' frameborder="0" allow="fullscreen; picture-in-picture" allowfullscreen loading="lazy"></iframe>'
  );
}

/** The fields that are present, in order, as [name, value]. */
function fields(response: OembedResponse): Array<[string, string | number]> {
  const out: Array<[string, string | number]> = [];
  for (const name of FIELD_ORDER) {
    const value = response[name];
    if (value !== undefined) out.push([name, value]);
  }
  return out;
}

/**
 * The JSON form: one object, sizes as numbers, ending in a newline; safe to inline in a page or wrap
 * as JSONP (`scriptSafeJson`: no `</script>` or U+2028 in it).
 */
export function oembedJson(response: OembedResponse): string {
  return `${scriptSafeJson(Object.fromEntries(fields(response)))}\n`;
}

/** The XML form: root `oembed`, one child per field; the markup in `html` is escaped text. */
export function oembedXml(response: OembedResponse, engine?: XmlEngine): string {
  return xmlDocument('oembed', undefined, (root) => {
    for (const [name, value] of fields(response)) root.leaf(name, value);
  }, { engine: engine });
}

/**
 * The HTML form: the bare markup, byte for byte the `html` field of the JSON and XML forms (the
 * seed: "the bare markup only, with no wrapper"). A consumer pastes it into its own page, so it
 * carries no document, head or style sheet of its own that would nest or restyle that page; the
 * complete page that plays the video is the embed page (embed-page.ts).
 */
export function oembedHtml(response: OembedResponse): string {
  return response.html;
}

/**
 * The default response of a video, computed once for its four forms: the build renders them one
 * after the other from the same view object, so a memo keyed on that object (and the site) saves
 * three embed renders per video. Weak keys: nothing outlives the view.
 */
const defaultResponses = new WeakMap<SiteContext, WeakMap<VideoView, OembedResponse>>();

function defaultResponse(video: VideoView, site: SiteContext): OembedResponse {
  let bySite = defaultResponses.get(site);
  if (bySite === undefined) defaultResponses.set(site, (bySite = new WeakMap()));
  let response = bySite.get(video);
  if (response === undefined) bySite.set(video, (response = oembedResponse(video, site)));
  return response;
}

/** What the four forms share: one directory per video, rendered from one response, edited rarely. */
const OEMBED_DIR = { scope: 'video', dir: 'oembed', cacheClass: 'profiles' } as const;
const JSON_TYPE = 'application/json; charset=utf-8';

// Only the default URL goes in the sitemap: the others are the same document in other forms.
export const oembed: VideoFormat = {
  ...OEMBED_DIR,
  name: 'oembed',
  urlName: '',
  file: 'index.json',
  mediaType: JSON_TYPE,
  inSitemap: true,
  summary: 'oEmbed 1.0 of a public video (JSON, the default)',
  render: ({ video }, site) => oembedJson(defaultResponse(video, site)),
};

export const oembedJsonFormat: VideoFormat = {
  ...OEMBED_DIR,
  name: 'oembed-json',
  urlName: 'json',
  file: 'json',
  mediaType: JSON_TYPE,
  inSitemap: false,
  summary: 'oEmbed 1.0 of a public video as JSON',
  render: ({ video }, site) => oembedJson(defaultResponse(video, site)),
};

export const oembedXmlFormat: VideoFormat = {
  ...OEMBED_DIR,
  name: 'oembed-xml',
  urlName: 'xml',
  file: 'xml',
  mediaType: 'text/xml; charset=utf-8',
  inSitemap: false,
  summary: 'oEmbed 1.0 of a public video as XML',
  render: ({ video }, site) => oembedXml(defaultResponse(video, site), site.xmlEngine),
};

export const oembedHtmlFormat: VideoFormat = {
  ...OEMBED_DIR,
  name: 'oembed-html',
  urlName: 'html',
  file: 'html',
  mediaType: 'text/html; charset=utf-8',
  inSitemap: false,
  summary: 'the embed markup of a public video (the `html` field, bare): an iframe of its embed page',
  render: ({ video }, site) => oembedHtml(defaultResponse(video, site)),
};


/**
 * The oEmbed discovery links of a video (oEmbed 1.0 section 4), for the `<head>` of the site's own
 * page of that video: a consumer given the page's URL (php-embed, ruby-oembed, WordPress) reads
 * them to find the endpoint. Each is the full request, with the page as `url` (the specification's
 * form; consumers that add `maxwidth` send their request to `vidfeeds serve` through the host
 * configuration's upstream). One line each, HTML-escaped, ending in a newline.
 */
export function oembedDiscoveryLinks(publicId: string, paths: SitePaths): string {
  const query = `?url=${encodeURIComponent(paths.videoPage(publicId))}`;
  const link = (type: string, form: VideoFormat) =>
    `<link rel="alternate" type="${type}" href="${escapeAttr(paths.url(form, publicId) + query)}">\n`;
  return link('application/json+oembed', oembedJsonFormat) + link('text/xml+oembed', oembedXmlFormat);
}
