import Database from 'better-sqlite3';
import { migrate } from '../db/migrations.js';
import { SYNC_ORDER } from './table-plan.js';

/**
 * The example mapping `vidfeeds init --write-config --sync-example` writes: for every vidfeeds
 * table, a query with SQL comments that say what the table feeds, which columns it requires and
 * which it may leave out. The columns come from the current schema (an empty database made in
 * memory), so the example never names a column vidfeeds does not have or misses a required one.
 * Each query reads a placeholder table, `site_<table>`, whose columns carry vidfeeds's names: the
 * operator replaces both with the site's own (docs/adopting.md shows two finished mappings).
 */

/** The environment variable the example reads the source's URL from, so that no password is written in the file. */
export const EXAMPLE_FROM_ENV = 'VIDFEEDS_SYNC_FROM';

/** What each table feeds, for the first comment line of its query. */
const FEEDS: Record<(typeof SYNC_ORDER)[number], string> = {
  users: 'every per-user document; only active users are published',
  categories: 'RSS categories, APML concepts, OPML groups',
  tags: "RSS tag links and keywords, FOAF's interests",
  online_accounts: "FOAF's online accounts",
  interests: "FOAF's interests (the tags a user declares)",
  friendships: "FOAF's knows",
  videos: 'RSS, Atom, XSPF, oEmbed and the sitemap; only public videos are published',
  video_tags: "each video's tags in RSS",
  groups: "each member's Atom feed (one entry per group)",
  group_members: "each member's Atom feed",
  saved_videos: "the XSPF playlist, in position order",
  viewing_history: 'the XSPF playlist of a user with nothing saved and a public history',
  recommendations: "the recommendations list (leave it out and vidfeeds's own POST fills it)",
  attention_concepts: 'APML concepts (leave it out and every category is listed at 0)',
  attention_sources: 'APML sources',
  reading_list: 'the OPML reading list',
};

interface Column {
  name: string;
  not_null: number;
  dflt: string | null;
  pk: number;
}

/** Per vidfeeds table, in sync order, its example query as lines. */
export function mappingExample(): Record<string, string[]> {
  const db = new Database(':memory:');
  try {
    migrate(db, ':memory:');
    const example: Record<string, string[]> = {};
    for (const table of SYNC_ORDER) {
      const columns = db.prepare('SELECT name, "notnull" AS not_null, dflt_value AS dflt, pk FROM pragma_table_info(?)').all(table) as Column[];
      const required = columns.filter((c) => c.pk > 0 || (c.not_null === 1 && c.dflt === null)).map((c) => c.name);
      const optional = columns.filter((c) => !required.includes(c.name)).map((c) => c.name);
      example[table] = [
        `-- ${table}: ${FEEDS[table]}. Remove this entry if the site has no such rows: the table is then left untouched.`,
        `-- Replace site_${table} and each column with the site's own (its_column AS ${required[0]}); keys must be integers.`,
        ...(optional.length === 0 ? [] : [`-- May also return: ${optional.join(', ')} (left out: the default on insert, kept on update).`]),
        `SELECT ${required.join(', ')}`,
        `FROM site_${table}`,
      ];
    }
    return example;
  } finally {
    db.close();
  }
}
