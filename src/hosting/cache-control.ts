import type { CacheControlConfig } from '../config/site-config.js';
import type { Format } from '../formats/format.js';

/**
 * How long a client or a CDN may keep each document: the Cache-Control header of every host
 * configuration (nginx, Apache, `_headers`), of the upload manifest and of `vidfeeds serve`. Each
 * format names its class in its descriptor (`cacheClass`, src/formats/format.ts says what the
 * classes are); the configuration gives each class its value, and `cacheControl.formats`
 * overrides a single format (docs/hosting.md).
 */
export function cacheControlOf(config: CacheControlConfig, format: Format): string {
  return config.formats[format.name] ?? config[format.cacheClass];
}
