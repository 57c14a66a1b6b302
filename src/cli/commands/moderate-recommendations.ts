import { InvalidArgumentError, type Command } from 'commander';
import { openForUpdate, openForReading } from '../../db/open-database.js';
import { listForReview, review, REVIEW_STATUSES, type ReviewRow, type ReviewStatus, type Selection } from '../../db/moderation.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { requireOption } from '../check-command-line.js';
import { configOptions, databaseOf, exitCodesHelp, positiveInteger, readSettings } from './shared-options.js';
import { replacedUnshowable } from '../../config/shown-text.js';

/**
 * `vidfeeds recommendations list|approve|reject`: moderation of submitted recommendations
 * (docs/serve.md, "Moderating"). Approving or rejecting
 * changes rows the change log records, so the next incremental build (or watch) follows.
 */

interface SelectFlags {
  config?: string;
  db?: string;
  user?: string;
  from?: string;
}

interface ListFlags extends SelectFlags {
  status: ReviewStatus | 'all';
  limit?: number;
  json?: boolean;
}

interface ReviewFlags extends SelectFlags {
  all?: boolean;
}

function parseStatus(value: string): ReviewStatus | 'all' {
  if (value === 'all' || (REVIEW_STATUSES as readonly string[]).includes(value)) return value as ReviewStatus | 'all';
  throw new InvalidArgumentError(`must be one of ${[...REVIEW_STATUSES, 'all'].join(', ')}`);
}

function parseIds(raw: readonly string[]): number[] {
  return raw.map((text) => {
    if (!/^\d{1,15}$/.test(text) || Number(text) < 1) throw new UsageError(`${JSON.stringify(text)} is not a recommendation id (a whole number from 1)`);
    return Number(text);
  });
}

/** Text from the database on a terminal: control and bidirectional characters cannot act on it. */
function shown(text: string | null): string {
  return text === null ? '-' : replacedUnshowable(text);
}

function line(row: ReviewRow): string {
  const date = new Date(row.createdAt * 1000).toISOString().replace('.000Z', 'Z');
  return [row.id, row.status, shown(row.username), date, shown(row.submitter), shown(row.link), shown(row.title)].join('\t');
}

export function registerRecommendations(program: Command, io: Console, setExit: (code: number) => void): void {
  const group = program
    .command('recommendations')
    .description('moderate submitted recommendations: list, approve, reject (per user, per submitter address, or in bulk)');

  const list = group.command('list').description('list recommendations, newest first: id, status, user, received, from, link, title (tab-separated)');
  requireOption(list, '--db <file>', 'site database (SQLite)', 'db');
  exitCodesHelp(configOptions(list, { baseUrl: false, siteName: false }), { 0: 'listed', 2: 'bad flags, configuration or database' })
    .option('--user <name>', 'only those for this user')
    .option('--from <address>', 'only those sent from this client address')
    .option('--status <status>', 'pending, approved, rejected or all', parseStatus, 'pending')
    .option('--limit <n>', 'at most this many', positiveInteger('--limit'))
    .option('--json', 'one JSON object per line instead of tab-separated text')
    .action((flags: ListFlags) => {
      const db = openForReading(databaseOf(flags.db, readSettings(flags, io).run));
      let rows: ReviewRow[];
      try {
        rows = listForReview(db, { username: flags.user, submitter: flags.from, status: flags.status, limit: flags.limit });
      } finally {
        db.close();
      }
      for (const row of rows) io.out(flags.json ? JSON.stringify(row) : line(row));
      io.log.info(`${rows.length} ${flags.status === 'all' ? '' : `${flags.status} `}recommendation${rows.length === 1 ? '' : 's'}`);
      setExit(EXIT.ok);
    });

  for (const [verb, status] of [
    ['approve', 'approved'],
    ['reject', 'rejected'],
  ] as const) {
    const command = group
      .command(verb)
      .description(
        `${verb} recommendations by id (any status), or every pending one of --user, of --from, or --all; ` +
          'the next build or watch follows',
      )
      .argument('[ids...]', 'recommendation ids, as `list` shows them');
    requireOption(command, '--db <file>', 'site database (SQLite)', 'db');
    exitCodesHelp(configOptions(command, { baseUrl: false, siteName: false }), { 0: `${status} them all`, 1: 'an id names no recommendation (the others were changed)', 2: 'bad flags, configuration or database: nothing was changed' })
      .option('--user <name>', 'the pending ones for this user')
      .option('--from <address>', 'the pending ones sent from this client address')
      .option('--all', 'every pending one')
      .action((rawIds: string[], flags: ReviewFlags) => {
        const ids = parseIds(rawIds);
        if (ids.length === 0 && flags.user === undefined && flags.from === undefined && !flags.all) {
          throw new UsageError(`${verb} needs ids, --user, --from or --all: nothing was changed`);
        }
        if (flags.all && (ids.length > 0 || flags.user !== undefined || flags.from !== undefined)) {
          throw new UsageError('--all takes no ids, --user or --from: nothing was changed');
        }
        const selection: Selection = { ids: ids.length > 0 ? ids : undefined, username: flags.user, submitter: flags.from };
        const db = openForUpdate(databaseOf(flags.db, readSettings(flags, io).run));
        let outcome;
        try {
          outcome = review(db, selection, status, new Date());
        } finally {
          db.close();
        }
        if (outcome.changed.length > 0) io.out(outcome.changed.join('\n'));
        io.log.info(`${status} ${outcome.changed.length} recommendation${outcome.changed.length === 1 ? '' : 's'}; the next build or watch publishes the change`);
        if (outcome.missing.length > 0) {
          io.log.error(`no recommendation ${outcome.missing.join(', ')}`);
          setExit(EXIT.failed);
          return;
        }
        setExit(EXIT.ok);
      });
  }
}
