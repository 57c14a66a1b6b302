import type { SiteConfig } from '../../config/site-config.js';
import { VIDFEEDS_GENERATOR } from '../../config/version.js';
import type { Format, SiteContext } from '../../formats/format.js';
import type { VideoView } from '../../model/views.js';
import { SitePaths } from '../../paths/site-paths.js';
import { checkPlaces } from '../../paths/url-scheme.js';
import { recommendations } from '../../formats/recommendations.js';
import { SitemapPartCache } from '../../formats/sitemap-parts.js';
import { createEmbedRenderer, type EmbedLinks } from '../../render/embed.js';
import type { XmlEngine } from '../../render/xml-engine.js';

/** A video with every field set, to check templates before a build writes anything. */
export const SAMPLE_VIDEO: VideoView = {
  id: 0,
  publicId: 'sample',
  title: 'Sample <video> & "title"',
  description: 'Sample description',
  durationSeconds: 61,
  fileUrl: 'https://example.org/files/sample.flv',
  fileSize: 1000,
  fileType: 'video/x-flv',
  width: 320,
  height: 240,
  thumbnailUrl: 'https://example.org/thumbs/sample.jpg',
  thumbnailWidth: 120,
  thumbnailHeight: 90,
  captionsUrl: 'https://example.org/captions/sample.srt',
  category: 'Sample',
  tags: ['sample'],
  uploader: { username: 'sample', displayName: 'Sample', avatarUrl: null, homepageUrl: null, emailSha1: null },
  createdAt: new Date(0),
  updatedAt: new Date(0),
};

/**
 * Everything renderers share, built from validated configuration once per build, or once per
 * configuration in `watch`, whose builds share it (and so the sitemap parts it keeps). Loading the
 * templates here means a missing or broken template stops the build before any file is written.
 */
export function createSiteContext(config: SiteConfig, formats: readonly Format[], now: Date = new Date(), xmlEngine: XmlEngine = 'fast'): SiteContext {
  checkPlaces(formats);
  const paths = new SitePaths(config.baseUrl, config.pages, formats);
  return {
    config,
    paths,
    now,
    formats,
    embed: createEmbedRenderer(config.player, embedLinks(paths), SAMPLE_VIDEO),
    generator: { ...VIDFEEDS_GENERATOR },
    xmlEngine,
    sitemapParts: new SitemapPartCache(),
  };
}

/** The URLs an embed links to: the site's pages and the uploader's recommendations document. */
function embedLinks(paths: SitePaths): EmbedLinks {
  return {
    videoPage: (publicId) => paths.videoPage(publicId),
    userPage: (username) => paths.userPage(username),
    recommendations: (username) => paths.url(recommendations, username),
  };
}
