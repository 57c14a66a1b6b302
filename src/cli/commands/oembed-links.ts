import type { Command } from 'commander';
import { loadConfig } from '../../config/load-config.js';
import { oembedDiscoveryLinks } from '../../formats/oembed.js';
import { FORMATS } from '../../formats/registry.js';
import { SitePaths } from '../../paths/site-paths.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { configOptions, configOverrides, type ConfigFlags } from './shared-options.js';

/**
 * `vidfeeds oembed-links VIDEO...`: prints the oEmbed discovery links of each video, the partial
 * the site's own video page puts in its `<head>` (docs/oembed.md). Reads only the configuration:
 * the links are made from the base URL and `pages.video`, as the documents are.
 */
export function registerOembedLinks(program: Command, io: Console, setExit: (code: number) => void): void {
  configOptions(
    program
      .command('oembed-links')
      .description("print the oEmbed discovery <link> elements of videos, for the <head> of the site's own video pages")
      .argument('<video...>', 'video ids (public_id)'),
  ).action((videos: string[], flags: ConfigFlags) => {
    const config = loadConfig({ configFile: flags.config, overrides: configOverrides(flags) });
    const paths = new SitePaths(config.baseUrl, config.pages, FORMATS);
    // Every id is checked before anything is printed: a partial for half the list helps no one.
    for (const video of videos) {
      const problem = paths.problem(video);
      if (problem !== null) throw new UsageError(`video ${JSON.stringify(video)} cannot be published (${problem}), so it has no oEmbed documents`);
    }
    for (const video of videos) io.out(oembedDiscoveryLinks(video, paths).replace(/\n$/, ''));
    setExit(EXIT.ok);
  });
}
