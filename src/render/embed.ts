import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { PlayerConfig } from '../config/site-config.js';
import type { VideoView } from '../model/views.js';
import { isMediaType } from './media-type.js';
import { loadTemplate, TemplateError, templateProblem, type CompiledTemplate } from './templates.js';
import { xmlChars } from './xml-text.js';

/**
 * The player markup of a video (oEmbed `html`, the `/oembed/html` document), rendered from the
 * configured Handlebars template: `templates/embed/<player.template>.hbs`, looked up first in the
 * site's own `player.templatesDir`, then among the shipped ones (`flash`, `html5`).
 * docs/oembed.md lists the context a template gets.
 */
export interface EmbedRenderer {
  /** Markup for `video` at the given size (the configured player size when absent). */
  render(video: VideoView, size?: PlayerSize): string;
  /** The template file in use and its text, so a change of template can be detected. */
  readonly templateFile: string;
  readonly templateSource: string;
}

/**
 * The URLs an embed links to. The caller derives them from the site's paths and the format table
 * (src/pipeline/render/site-context.ts), so this layer needs neither.
 */
export interface EmbedLinks {
  videoPage(publicId: string): string;
  userPage(username: string): string;
  /** The uploader's recommendations document, which the Flash player offers after playing. */
  recommendations(username: string): string;
}

export interface PlayerSize {
  width: number;
  height: number;
}

/**
 * The values an embed template sees. Every value is plain text or a number; the template escapes
 * it with `{{ }}`, so nothing from the database can leave an attribute. URLs are absolute http(s)
 * (the reader drops anything else) and the flashvars values are already URL-encoded.
 */
export interface EmbedContext {
  /** The player size: the configured one, or smaller when an oEmbed consumer asked for a maximum. */
  width: number;
  height: number;
  videoId: string;
  title: string;
  pageUrl: string;
  fileUrl: string;
  fileType: string;
  /**
   * `fileType` when it is a media type a browser may play: well-formed (`type/subtype`,
   * parameters allowed) and not `application/octet-stream`, which stands in for a type the
   * database lacks or holds malformed (it names no media). Else null. Browsers skip a `<source>`
   * whose type they cannot parse or play, but sniff one without a type, so such a type is better
   * left out of the markup.
   */
  sourceType: string | null;
  thumbnailUrl: string;
  thumbnailWidth: number;
  thumbnailHeight: number;
  /** Null when the video has no captions. */
  captionsUrl: string | null;
  /** Null when unknown. */
  durationSeconds: number | null;
  authorName: string;
  authorUrl: string;
  /** The uploader's recommendation list (seed 2.1), which the Flash player shows after the video. */
  recommendationsUrl: string;
  player: PlayerConfig;
  /** The Flash `flashvars` value of the `object`: names and URL-encoded values joined with `&`. */
  flashvars: string;
  /** The same list for the `embed` fallback, which also carries `width` (seed 2.2). */
  flashvarsEmbed: string;
}

export function createEmbedRenderer(player: PlayerConfig, links: EmbedLinks, sampleVideo: VideoView): EmbedRenderer {
  checkTemplatesDir(player);
  const context = (video: VideoView, size?: PlayerSize) => embedContext(video, player, links, size);
  const { template, file, source }: { template: CompiledTemplate; file: string; source: string } = loadTemplate(
    'embed',
    player.template,
    player.templatesDir,
    context(sampleVideo),
  );
  // loadTemplate ran the template on a video that has everything; run it on one that lacks every
  // optional field too, so a mistake in an `{{else}}` branch also stops the build before any write.
  try {
    template(context({ ...sampleVideo, captionsUrl: null, durationSeconds: null }));
  } catch (error) {
    throw new TemplateError(file, templateProblem(error), error);
  }
  return {
    // Characters XML 1.0 forbids are dropped here, so the markup reads the same in the XML form,
    // the JSON form and the bare HTML. Surrounding white space (an editor's final newline) goes too.
    render: (video, size) => xmlChars(template(context(video, size))).trim(),
    templateFile: file,
    templateSource: source,
  };
}

/**
 * A site's own templates directory that is not there is a mistake in the configuration: without
 * this check every template would silently come from the shipped ones.
 */
function checkTemplatesDir(player: PlayerConfig): void {
  if (player.templatesDir === null) return;
  const dir = resolve(player.templatesDir);
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
    throw new TemplateError(`embed/${player.template}.hbs`, `the templates directory ${dir} (player.templatesDir) is not a directory`);
  }
}

/** The seed's flashvars (section 2.2), in its order; `width` goes to the `embed` fallback only. */
function flashvarList(context: Omit<EmbedContext, 'flashvars' | 'flashvarsEmbed'>, withWidth: boolean): Array<[string, string]> {
  const { player } = context;
  return [
    ['file', context.fileUrl],
    ['image', context.thumbnailUrl],
    ...(withWidth ? [['width', String(context.width)] as [string, string]] : []),
    // Every name is always present, as the seed lists them; an empty value means "none".
    ['captions', context.captionsUrl ?? ''],
    ['recommendations', context.recommendationsUrl],
    ['callback', player.statsCallbackUrl],
    ['location', player.playerUrl],
    ['logo', player.logoUrl],
    ['linkfromdisplay', String(player.linkFromDisplay)],
    ['link', context.pageUrl],
    ['linktarget', player.linkTarget],
    ['backcolor', player.backColor],
    ['frontcolor', player.frontColor],
    ['lightcolor', player.lightColor],
  ];
}

/** The type of a `<source>` (EmbedContext.sourceType). */
function playableType(fileType: string): string | null {
  return isMediaType(fileType) && !/^application\/octet-stream\s*(;|$)/i.test(fileType) ? fileType : null;
}

export function embedContext(video: VideoView, player: PlayerConfig, links: EmbedLinks, size?: PlayerSize): EmbedContext {
  const base = {
    width: size?.width ?? player.width,
    height: size?.height ?? player.height,
    videoId: video.publicId,
    title: video.title,
    pageUrl: links.videoPage(video.publicId),
    fileUrl: video.fileUrl,
    fileType: video.fileType,
    sourceType: playableType(video.fileType),
    thumbnailUrl: video.thumbnailUrl,
    thumbnailWidth: video.thumbnailWidth,
    thumbnailHeight: video.thumbnailHeight,
    captionsUrl: video.captionsUrl,
    durationSeconds: video.durationSeconds,
    authorName: video.uploader.username,
    authorUrl: links.userPage(video.uploader.username),
    recommendationsUrl: links.recommendations(video.uploader.username),
    player,
  };
  const join = (list: Array<[string, string]>) => list.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
  return { ...base, flashvars: join(flashvarList(base, false)), flashvarsEmbed: join(flashvarList(base, true)) };
}
