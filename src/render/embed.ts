import type { PlayerConfig } from '../config/config.js';
import type { VideoView } from '../model/views.js';
import type { SitePaths } from '../paths/site-paths.js';
import { loadTemplate, type CompiledTemplate } from './templates.js';

/** Renders the player markup of a video (oEmbed `html`, the `/oembed/html` document). */
export interface EmbedRenderer {
  /** Markup for `video` at the given size (the configured player size when absent). */
  render(video: VideoView, size?: { width: number; height: number }): string;
  /** The template file in use and its text, so a change of template can be detected. */
  readonly templateFile: string;
  readonly templateSource: string;
}

/**
 * The values an embed template sees. Every value is plain text; the template escapes it with
 * `{{ }}`, so nothing from the database can leave an attribute.
 */
export interface EmbedContext {
  width: number;
  height: number;
  title: string;
  pageUrl: string;
  fileUrl: string;
  fileType: string;
  thumbnailUrl: string;
  captionsUrl: string | null;
  player: PlayerConfig;
  /** The Flash `flashvars` value: names and URL-encoded values joined with `&`. */
  flashvars: string;
  /** The same list for the `embed` fallback, which also carries `width`. */
  flashvarsEmbed: string;
}

export function createEmbedRenderer(player: PlayerConfig, paths: SitePaths, sampleVideo: VideoView): EmbedRenderer {
  const context = (video: VideoView, size?: { width: number; height: number }) => embedContext(video, player, paths, size);
  const { template, file, source }: { template: CompiledTemplate; file: string; source: string } = loadTemplate(
    'embed',
    player.template,
    player.templatesDir,
    context(sampleVideo),
  );
  return {
    render: (video, size) => template(context(video, size)),
    templateFile: file,
    templateSource: source,
  };
}

export function embedContext(video: VideoView, player: PlayerConfig, paths: SitePaths, size?: { width: number; height: number }): EmbedContext {
  const width = size?.width ?? player.width;
  const height = size?.height ?? player.height;
  const pageUrl = paths.videoPage(video.publicId);
  const vars: Array<[string, string]> = [
    ['file', video.fileUrl],
    ['image', video.thumbnailUrl],
    ['captions', video.captionsUrl ?? ''],
    ['recommendations', paths.url(RECOMMENDATIONS_REF, video.uploader.username)],
    ['callback', player.statsCallbackUrl],
    ['location', player.playerUrl],
    ['logo', player.logoUrl],
    ['linkfromdisplay', String(player.linkFromDisplay)],
    ['link', pageUrl],
    ['linktarget', player.linkTarget],
    ['backcolor', player.backColor],
    ['frontcolor', player.frontColor],
    ['lightcolor', player.lightColor],
  ];
  const join = (list: Array<[string, string]>) => list.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
  return {
    width,
    height,
    title: video.title,
    pageUrl,
    fileUrl: video.fileUrl,
    fileType: video.fileType,
    thumbnailUrl: video.thumbnailUrl,
    captionsUrl: video.captionsUrl,
    player,
    flashvars: join(vars),
    flashvarsEmbed: join([...vars.slice(0, 2), ['width', String(width)], ...vars.slice(2)]),
  };
}

/** Where the player finds a user's recommendations: the openrecommender document's URL. */
const RECOMMENDATIONS_REF = { dir: 'openrecommender', urlName: '' } as const;
