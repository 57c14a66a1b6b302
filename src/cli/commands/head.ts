import type { Command } from 'commander';
import { checkDatabaseFile, openForReading } from '../../db/open-database.js';
import { SiteReader } from '../../db/site-reader.js';
import { FORMATS } from '../../formats/registry.js';
import { readLimits } from '../../formats/read-limits.js';
import { videoHead } from '../../formats/video-head.js';
import { createSiteContext } from '../../pipeline/render/site-context.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { configOptions, databaseOf, readSettings, type ConfigFlags } from './shared-options.js';

interface HeadFlags extends ConfigFlags {
  db?: string;
}

/**
 * `vidfeeds head VIDEO...`: prints the `<head>` snippet of each public video (src/formats/video-head.ts):
 * the oEmbed discovery links, Open Graph, the Twitter player card and a JSON-LD VideoObject, for
 * the site's own video page. Reads the database in one snapshot; a video that is not published
 * stops the command before anything is printed.
 */
export function registerHead(program: Command, io: Console, setExit: (code: number) => void): void {
  configOptions(
    program
      .command('head')
      .description("print the <head> snippet of public videos (oEmbed discovery, Open Graph, Twitter card, JSON-LD) for the site's own video pages")
      .argument('<video...>', 'video ids (public_id)')
      .option('--db <file>', 'site database (SQLite; default: db in the configuration)'),
  ).action((videos: string[], flags: HeadFlags) => {
    const { site: config, run } = readSettings(flags, io);
    const dbFile = databaseOf(flags.db, run);
    checkDatabaseFile(dbFile);
    const site = createSiteContext(config, FORMATS);
    const db = openForReading(dbFile);
    try {
      const reader = new SiteReader(db, readLimits(config.recommendationsCount));
      const snippets = reader.snapshot(() =>
        videos.map((id) => {
          const problem = site.paths.problem(id);
          if (problem !== null) throw new UsageError(`video ${JSON.stringify(id)} cannot be published (${problem}), so it has no head snippet`);
          const found = reader.videoByPublicId(id);
          if (found.status !== 'published') throw new UsageError(`video ${JSON.stringify(id)} is ${found.status === 'private' ? 'not public' : 'not in the database'}, so it has no head snippet`);
          return videoHead(found.video, site);
        }),
      );
      io.out(snippets.join('\n').replace(/\n$/, ''));
    } finally {
      db.close();
    }
    setExit(EXIT.ok);
  });
}
