import { readFileSync } from 'node:fs';
import type { SiteConfig } from '../config/config.js';
import type { Format } from '../formats/format.js';
import type { SiteContext } from '../model/site-context.js';
import type { VideoView } from '../model/views.js';
import { checkFormatTable, SitePaths } from '../paths/site-paths.js';
import { createEmbedRenderer } from '../render/embed.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; name: string };

export const VIDFEEDS_VERSION: string = pkg.version;

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
 * Everything renderers share, built once per build from validated configuration. Loading the
 * templates here means a missing or broken template stops the build before any file is written.
 */
export function createSiteContext(config: SiteConfig, formats: readonly Format[], now: Date = new Date()): SiteContext {
  checkFormatTable(formats);
  const paths = new SitePaths(config.baseUrl, config.pages, formats);
  return {
    config,
    paths,
    now,
    formats,
    embed: createEmbedRenderer(config.player, paths, SAMPLE_VIDEO),
    generator: { name: 'vidfeeds', version: VIDFEEDS_VERSION, uri: 'https://www.npmjs.com/package/vidfeeds' },
  };
}
