import type { Command } from 'commander';
import { resolve } from 'node:path';
import { openForUpdate } from '../../db/open-database.js';
import { storeRecommendation, validateRecommendation, type NewRecommendation } from '../../db/recommendations.js';
import { showName } from '../../paths/names.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';

interface RecommendFlags {
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
  recommendation: NewRecommendation;
}

export function parseRecommendRequest(username: string, flags: RecommendFlags): RecommendRequest {
  if (username === '') throw new UsageError('recommend needs a user name');
  const checked = validateRecommendation({
    title: flags.title,
    image: flags.image,
    link: flags.link,
    description: flags.description,
    duration: flags.duration,
  });
  if (!checked.ok) throw new UsageError(`--${checked.field}: ${checked.message}; nothing stored`);
  return { db: resolve(flags.db), username, recommendation: checked.value };
}

export function registerRecommend(program: Command, io: Console, setExit: (code: number) => void): void {
  program
    .command('recommend')
    .description("store a recommendation for a user (the seed's POST to /<user>/openrecommender/); the next build publishes it")
    .argument('<user>', 'username of the published user it is for')
    .requiredOption('--db <file>', 'site database (SQLite) to write to')
    .option('--title <text>', 'title of the recommended video (required)')
    .option('--image <url>', 'absolute http(s) URL of its thumbnail, poster or still (required)')
    .option('--link <url>', 'absolute http(s) URL of the video (required)')
    .option('--description <text>', 'text description of the video')
    .option('--duration <time>', 'length of the video, as mm:ss or whole seconds')
    .action((username: string, flags: RecommendFlags) => {
      const request = parseRecommendRequest(username, flags);
      const db = openForUpdate(request.db);
      let result;
      try {
        result = storeRecommendation(db, request.username, request.recommendation, new Date());
      } finally {
        db.close();
      }
      if (result.status === 'unknown-user') {
        throw new UsageError(
          `user ${showName(request.username)} is not a published user of ${request.db} ` +
            `(no such user, suspended or deleted, or a name that cannot be a path); nothing stored`,
        );
      }
      io.out(`stored recommendation ${result.id} for ${request.username}`);
      io.err(`vidfeeds: run \`vidfeeds build --user ${request.username}\` (or let watch pick it up) to publish it`);
      setExit(EXIT.ok);
    });
}
