import type { Command } from 'commander';
import { resolve } from 'node:path';
import { loadConfig, type SiteConfig } from '../../config/config.js';
import { openForUpdate } from '../../db/open-database.js';
import { submitRecommendation, validateRecommendation, type RecommendationInput } from '../../db/submit-recommendation.js';
import { showName } from '../../paths/names.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { configOptions, configOverrides, type ConfigFlags } from './shared-options.js';

interface RecommendFlags extends ConfigFlags {
  db: string;
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

export function parseRecommendRequest(username: string, flags: RecommendFlags): RecommendRequest {
  if (username === '') throw new UsageError('recommend needs a user name');
  const config = loadConfig({ configFile: flags.config, overrides: configOverrides(flags) });
  const input = { title: flags.title, image: flags.image, link: flags.link, description: flags.description, duration: flags.duration };
  // The same check runs again in submitRecommendation; here it stops before the database is opened.
  const checked = validateRecommendation(input, { allowedHosts: config.recommendationSubmit.allowedHosts });
  if (!checked.ok) throw new UsageError(`--${checked.field}: ${checked.message}; nothing stored`);
  return { db: resolve(flags.db), username, input, config };
}

export function registerRecommend(program: Command, io: Console, setExit: (code: number) => void): void {
  configOptions(
    program
      .command('recommend')
      .description(
        "submit a recommendation for a user, as the POST to /<user>/openrecommender/ does: held for moderation unless " +
          'the configuration publishes at once, within the same limits per user as the POST',
      )
      .argument('<user>', 'username of the published user it is for')
      .requiredOption('--db <file>', 'site database (SQLite) to write to')
      .option('--title <text>', 'title of the recommended video (required)')
      .option('--image <url>', 'absolute http(s) URL of its thumbnail, poster or still (required)')
      .option('--link <url>', 'absolute http(s) URL of the video (required)')
      .option('--description <text>', 'text description of the video')
      .option('--duration <time>', 'length of the video, as mm:ss or whole seconds'),
  ).action((username: string, flags: RecommendFlags) => {
    const request = parseRecommendRequest(username, flags);
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
        io.err(`vidfeeds: ${showName(request.username)} already has this link (recommendation ${result.id}); nothing stored`);
        setExit(EXIT.failed);
        return;
      case 'limited':
        io.err(`vidfeeds: ${result.message} (try again in ${result.retryAfterSeconds} seconds); nothing stored`);
        setExit(EXIT.failed);
        return;
      case 'stored':
        if (result.published) {
          io.out(`stored recommendation ${result.id} for ${request.username}, published`);
          io.err(`vidfeeds: run \`vidfeeds build --user ${request.username}\` (or let watch pick it up) to publish it`);
        } else {
          io.out(`stored recommendation ${result.id} for ${request.username}, pending moderation`);
          io.err(`vidfeeds: approve it with \`vidfeeds recommendations approve ${result.id} --db ${request.db}\`; the next build publishes it`);
        }
        setExit(EXIT.ok);
    }
  });
}
