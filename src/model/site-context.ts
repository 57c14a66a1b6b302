import type { SiteConfig } from '../config/config.js';
import type { Format } from '../formats/format.js';
import type { SitePaths } from '../paths/site-paths.js';
import type { EmbedRenderer } from '../render/embed.js';

/** Everything a renderer may know besides its view: configuration, URLs, the build's clock. */
export interface SiteContext {
  readonly config: SiteConfig;
  readonly paths: SitePaths;
  /**
   * The build's "now", passed in so it is testable. Documents must not print it: every date in a
   * document comes from the data, so that the same database gives the same bytes on every build.
   */
  readonly now: Date;
  /** The formats this build knows, for documents that list or link to others (sitemap, robots). */
  readonly formats: readonly Format[];
  /** Renders the player markup from the configured Handlebars template. */
  readonly embed: EmbedRenderer;
  readonly generator: { name: string; version: string; uri: string };
}
