import type { SiteConfig } from '../config/site-config.js';
import { VIDFEEDS_VERSION } from '../config/version.js';
import type { SitePaths } from '../paths/site-paths.js';
import type { Routes } from '../hosting/routes.js';
import { changesOfFiles, notifySettingsOf } from '../deploy/change-set.js';
import { notifyChanges, type Delivery, type NotifySettings } from '../deploy/notify.js';
import type { Console } from './output.js';
import { reportDeliveries } from './notify-report.js';

/** Options every command that announces changes takes: the hook, and leaving the configured ones out. */
export interface AnnounceFlags {
  onChange?: string;
  /** commander's `--no-notify`: false when given. */
  notify: boolean;
}

/**
 * Who hears of a build's changes: the `--on-change` command always; the configured hubs and
 * IndexNow when the configuration announces after builds (`notifyAfter: "build"`) and
 * `--no-notify` was not given. Null when no one does.
 */
export function buildNotifySettings(config: SiteConfig, paths: SitePaths, flags: AnnounceFlags): NotifySettings | null {
  const settings = notifySettingsOf(config, paths, flags.onChange);
  if (!flags.notify || config.notifyAfter !== 'build') Object.assign(settings, { hubs: [], indexNow: null });
  return settings.hubs.length === 0 && settings.indexNow === null && settings.onChange === undefined ? null : settings;
}

/** Sends a finished build's changes to whoever hears of them; says on stderr what was delivered and what was not. */
export async function announceBuild(
  settings: NotifySettings,
  files: { written: readonly string[]; removed: readonly string[] },
  paths: SitePaths,
  routes: Routes,
  io: Console,
): Promise<Delivery[]> {
  const deliveries = await notifyChanges(changesOfFiles(files.written, files.removed, paths, routes), settings, { userAgent: `vidfeeds/${VIDFEEDS_VERSION}` });
  reportDeliveries(deliveries, io);
  return deliveries;
}
