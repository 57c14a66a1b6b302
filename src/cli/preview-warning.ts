import { DEFAULT_BASE_URL } from '../config/config-schema.js';
import { DEFAULT_CONFIG_FILE, previewUrlSettings } from '../config/load-config.js';
import type { SiteConfig } from '../config/site-config.js';
import { isDemoDatabase } from '../db/demo-data.js';

/**
 * One line when a build of a real site (not a demo database) would link to the defaults on
 * `http://localhost:8080`: the documents would carry them to every reader. Null when all is set.
 * `build` and `watch` print it once, before they write.
 */
export function previewUrlWarning(config: SiteConfig, db: string): string | null {
  const preview = previewUrlSettings(config);
  if (preview.length === 0 || isDemoDatabase(db) !== false) return null;
  const them = preview.length > 1 ? 'them' : 'it';
  const flag = preview.includes('baseUrl') ? ' (or pass --base-url)' : '';
  return `warning: ${preview.join(', ')} still at the default ${DEFAULT_BASE_URL}: the documents will link there; set ${them} in ${DEFAULT_CONFIG_FILE}${flag}`;
}
