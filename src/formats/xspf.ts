import type { SiteContext, UserFormat } from './format.js';
import type { UserBundle } from '../model/views.js';
import { NS, xmlDocument } from '../render/xml.js';

/**
 * XSPF playlist (seed 2.5) of the user's public saved videos, in the user's order. A static file
 * has no logged-in viewer, so when the user saved nothing public the playlist is the user's own
 * public viewing history if the user made it public, and otherwise an empty `trackList`
 * (the reader chooses, see `UserBundle.playlist`).
 *
 * Differences from the seed: UTF-8, not iso-8859-1 (names are Unicode; every XML parser reads
 * UTF-8); tracks also carry `duration` (milliseconds) when known; the playlist carries a title,
 * creator, annotation, info and location of its own.
 */

const ALBUM = {
  saved: (who: string) => `Videos saved by ${who}`,
  history: (who: string) => `Videos watched by ${who}`,
  none: (who: string) => `Videos saved by ${who}`,
} as const;

const ANNOTATION = {
  saved: (who: string) => `The public videos ${who} saved, in ${who}'s order.`,
  history: (who: string) => `${who} has saved no public videos; these are the public videos ${who} watched last, most recent first.`,
  none: (who: string) => `${who} has saved no public videos yet.`,
} as const;

export const xspf: UserFormat = {
  name: 'xspf',
  scope: 'user',
  dir: 'xspf',
  file: 'index.xspf',
  urlName: '',
  mediaType: 'application/xspf+xml; charset=utf-8',
  inSitemap: true,
  summary: "XSPF playlist of the user's public saved videos (or public viewing history)",
  cacheClass: 'feeds',
  needs: ['playlist'],

  render({ user, playlist }: UserBundle, site: SiteContext): string {
    const who = user.username;
    const album = ALBUM[playlist.source](who);
    return xmlDocument('playlist', { version: '1', xmlns: NS.xspf }, (root) => {
      root
        .leaf('title', `${site.config.siteName}: ${album}`)
        .leaf('creator', who)
        .leaf('annotation', ANNOTATION[playlist.source](who))
        .leaf('info', site.paths.userPage(who))
        .leaf('location', site.paths.url(xspf, who));
      const tracks = root.el('trackList');
      for (const video of playlist.videos) {
        tracks
          .el('track')
          .leaf('location', video.fileUrl)
          .leaf('title', video.title)
          .leaf('creator', video.uploader.username)
          .optionalLeaf('annotation', video.description)
          .leaf('info', site.paths.videoPage(video.publicId))
          .leaf('image', video.thumbnailUrl)
          .leaf('album', album)
          .optionalLeaf('duration', video.durationSeconds === null ? null : video.durationSeconds * 1000);
      }
    }, { engine: site.xmlEngine });
  },
};
