import type { Command } from 'commander';
import type { SiteConfig } from '../../config/site-config.js';
import { openForUpdate } from '../../db/open-database.js';
import { submitRecommendation, validateRecommendation, type RecommendationInput } from '../../db/submit-recommendation.js';
import { showName } from '../../paths/names.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { requireOption } from '../check-command-line.js';
import { configOptions, databaseOf, exitCodesHelp, readSettings, type ConfigFlags } from './shared-options.js';

interface RecommendFlags extends ConfigFlags {
  db?: string;
  title?: string;
  image?: string;
  link?: string;
  description?: string;
  duration?: string;
}

/** The typed request of one submit, from raw flags; checked before the database is opened. */
export interface RecommendRequest {
  db: string;
  username: string;
  input: RecommendationInput;
  config: SiteConfig;
}

export function parseRecommendRequest(username: string, flags: RecommendFlags, io: Console): RecommendRequest {
  if (username === '') throw new UsageError('recommend needs a user name');
  const { site: config, run } = readSettings(flags, io);
  const db = databaseOf(flags.db, run);
  const input = { title: flags.title, image: flags.image, link: flags.link, description: flags.description, duration: flags.duration };
  // The same check runs again in submitRecommendation; here it stops before the database is opened.
  const checked = validateRecommendation(input, { allowedHosts: config.recommendationSubmit.allowedHosts });
  if (!checked.ok) throw new UsageError(`--${checked.field}: ${checked.message}; nothing stored`);
  return { db, username, input, config };
}

export function registerRecommend(program: Command, io: Console, setExit: (code: number) => void): void {
  const command = program
    .command('recommend')
    .description(
      "submit a recommendation for a user, as the POST to /<user>/openrecommender/ does: held for moderation unless " +
        'the configuration publishes at once, within the same limits per user as the POST',
    )
    .argument('<user>', 'username of the published user it is for');
  requireOption(command, '--db <file>', 'site database (SQLite) to write to', 'db');
  requireOption(command, '--title <text>', 'title of the recommended video');
  requireOption(command, '--image <url>', 'absolute http(s) URL of its thumbnail, poster or still');
  requireOption(command, '--link <url>', 'absolute http(s) URL of the video');
  exitCodesHelp(configOptions(
    command
      .option('--description <text>', 'text description of the video')
      .option('--duration <time>', 'length of the video, as mm:ss or whole seconds'),
    { baseUrl: false, siteName: false },
  ), {
    0: 'stored',
    1: 'the user already has this link, or a limit is reached: nothing stored',
    2: 'bad input or configuration, an unknown, suspended or deleted user, or a missing database: nothing stored',
  }).action((username: string, flags: RecommendFlags) => {
    const request = parseRecommendRequest(username, flags, io);
    const db = openForUpdate(request.db);
    let result;
    try {
      result = submitRecommendation(
        db,
        { username: request.username, input: request.input, submitter: null, now: new Date() },
        request.config.recommendationSubmit,
      );
    } finally {
      db.close();
    }
    switch (result.status) {
      case 'invalid':
        throw new UsageError(`--${result.field}: ${result.message}; nothing stored`);
      case 'unknown-user':
        throw new UsageError(
          `user ${showName(request.username)} is not a published user of ${request.db} ` +
            `(no such user, suspended or deleted, or a name that cannot be a path); nothing stored`,
        );
      case 'duplicate':
        io.log.error(`${showName(request.username)} already has this link (recommendation ${result.id}); nothing stored`);
        setExit(EXIT.failed);
        return;
      case 'limited':
        io.log.error(`${result.message} (try again in ${result.retryAfterSeconds} seconds); nothing stored`);
        setExit(EXIT.failed);
        return;
      case 'stored':
        if (result.published) {
          io.out(`stored recommendation ${result.id} for ${request.username}, published`);
          io.log.info(`run \`vidfeeds build --user ${request.username}\` (or let watch pick it up) to publish it`);
        } else {
          io.out(`stored recommendation ${result.id} for ${request.username}, pending moderation`);
          io.log.info(`approve it with \`vidfeeds recommendations approve ${result.id} --db ${request.db}\`; the next build publishes it`);
        }
        setExit(EXIT.ok);
    }
  });
}
