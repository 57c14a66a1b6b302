import type { SiteContext, VideoFormat } from './format.js';
import type { VideoView } from '../model/views.js';
import { escapeAttr, escapeText, videoName, xmlChars } from '../render/xml-text.js';

/**
 * The embed page of a public video, `/<video>/embed/`: a complete HTML document holding the
 * player of the embed template (`player.template`) and nothing else a consumer's page could
 * clash with. The oEmbed `html` is an `<iframe>` of it (docs/oembed.md), as every video provider
 * that embeds well answers: the player lives on the site's origin, the embedding page can neither
 * style nor script it, and a consumer can sandbox it (WordPress adds `sandbox="allow-scripts"`).
 *
 * - It fills its frame whatever the frame's size: no margins, the player scaled to the viewport
 *   (CSS over the template's width and height attributes), nothing scrolls.
 * - Its title, over the top of the player, links to the video's page in a new browsing context
 *   (`target="_blank"`, `rel="noopener"`: a frame's own navigation would leave the viewer inside
 *   the consumer's box).
 * - It uses no script, so it plays in a sandbox that allows none, and it has no relative URL, so
 *   it reads the same wherever it is saved.
 * - Every host configuration sends it with `Content-Security-Policy: frame-ancestors *` and no
 *   `X-Frame-Options` (`headers` below): any site may frame it, which is its purpose.
 */

/** The page's style sheet: the player covers the viewport; the title sits over its top edge. */
const STYLE =
  'html,body{margin:0;padding:0;width:100%;height:100%;overflow:hidden;background:#000}' +
  '.player{position:fixed;inset:0}' +
  '.player>video,.player>object,.player>object>embed{display:block;width:100%;height:100%;object-fit:contain}' +
  '.title{position:fixed;top:0;left:0;right:0;margin:0;padding:.4em .6em;font:14px/1.3 system-ui,sans-serif;' +
  'white-space:nowrap;overflow:hidden;text-overflow:ellipsis;background:linear-gradient(rgba(0,0,0,.7),transparent);pointer-events:none}' +
  '.title a{color:#fff;text-decoration:none;pointer-events:auto}.title a:hover,.title a:focus{text-decoration:underline}';

/** Text and attribute values of the page: characters XML forbids dropped (as in every document), then escaped. */
const text = (value: string) => escapeText(xmlChars(value));
const attr = (value: string) => escapeAttr(xmlChars(value));

export function embedPage(video: VideoView, site: SiteContext): string {
  const { config, paths } = site;
  const page = paths.videoPage(video.publicId);
  const title = videoName(video);
  return (
    '<!DOCTYPE html>\n' +
    `<html lang="${attr(config.language)}">\n` +
    '<head>\n' +
    '<meta charset="utf-8">\n' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n' +
    `<title>${text(title)} – ${text(config.siteName)}</title>\n` +
    `<link rel="canonical" href="${attr(page)}">\n` +
    `<style>${STYLE}</style>\n` +
    '</head>\n' +
    '<body>\n' +
    `<div class="player">${site.embed.render(video)}</div>\n` +
    `<p class="title"><a href="${attr(page)}" target="_blank" rel="noopener">${text(title)}</a></p>\n` +
    '</body>\n' +
    '</html>\n'
  );
}

/**
 * Any site may frame the page. `*` in `frame-ancestors` matches every http(s) origin, and a
 * browser that sees `frame-ancestors` ignores an `X-Frame-Options` a proxy in front might add (the
 * HTML standard's processing of that header).
 */
export const FRAME_ANY_ANCESTOR = { 'Content-Security-Policy': 'frame-ancestors *' } as const;

export const embedPageFormat: VideoFormat = {
  scope: 'video',
  dir: 'embed',
  urlName: '',
  file: 'index.html',
  name: 'embed',
  mediaType: 'text/html; charset=utf-8',
  // Listed in the sitemap as the player of the video's page; where it is the video's page itself
  // (the default `pages.video`), as that page.
  inSitemap: false,
  headers: FRAME_ANY_ANCESTOR,
  summary: 'the embed page of a public video: a complete HTML page holding the player, frameable by any site',
  cacheClass: 'profiles',
  player: true,
  render: ({ video }, site) => embedPage(video, site),
};
