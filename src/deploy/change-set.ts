import type { SiteConfig } from '../config/site-config.js';
import { indexNowKey } from '../formats/indexnow-key.js';
import type { SitePaths } from '../paths/site-paths.js';
import { routeOfFile } from '../hosting/manifest.js';
import type { Routes } from '../hosting/routes.js';
import { isWebSubTopic } from '../hosting/websub-links.js';
import type { Changes, NotifySettings } from './notify.js';

/** The file, at the top of the tree, that proves the site holds its IndexNow key. */
export const INDEXNOW_KEY_FILE = indexNowKey.file;

/** What a document is to the listeners: indexable (a user or video document), and a WebSub topic (a feed). */
export interface ReaderKind {
  indexable: boolean;
  feed: boolean;
}

/** A file's kind for the listeners; null for a file no URL serves. */
export function readerKindOf(routes: Routes, file: string): ReaderKind | null {
  const match = routeOfFile(routes, file);
  if (match === null) return null;
  return match.kind === 'keyed' ? { indexable: true, feed: isWebSubTopic(match.format) } : { indexable: false, feed: false };
}

/**
 * What changed for readers, from the files a build wrote and removed (its report) or a deploy
 * uploaded and deleted: their public URLs, which of them are feeds, which are indexable.
 */
export function changesOfFiles(written: Iterable<string>, removed: Iterable<string>, paths: SitePaths, routes: Routes): Changes {
  const changed = new Set<string>();
  const gone = new Set<string>();
  const feeds = new Set<string>();
  const indexable = new Set<string>();
  const visit = (file: string, into: Set<string>, isRemoved: boolean) => {
    const kind = readerKindOf(routes, file);
    if (kind === null) return;
    const url = paths.urlOfFile(file);
    into.add(url);
    if (kind.indexable) indexable.add(url);
    if (!isRemoved && kind.feed) feeds.add(url);
  };
  for (const file of written) visit(file, changed, false);
  for (const file of removed) visit(file, gone, true);
  return { changed: [...changed], removed: [...gone], feeds: [...feeds], indexable: [...indexable] };
}

/** Who hears of changes under a configuration (and the command line's hook). */
export function notifySettingsOf(config: SiteConfig, paths: SitePaths, onChange: string | undefined): NotifySettings {
  const key = config.indexNow.key;
  return {
    hubs: config.websub.hubs,
    feedsPerRequest: config.websub.feedsPerRequest,
    indexNow: key === null ? null : { key, endpoint: config.indexNow.endpoint, keyLocation: paths.siteUrl(INDEXNOW_KEY_FILE), host: new URL(paths.base).host },
    ...(onChange === undefined ? {} : { onChange }),
  };
}
