/**
 * Every column of the site database, by the type its values must have and what happens to a row
 * whose value does not (docs/database.md, "Values of the wrong type"). One description serves the
 * reader's decoding (src/db/decode.ts), the migration that refuses wrong types at write time
 * (src/db/type-checks.ts), the build's scan of the columns SQL decides on, and the tests that try
 * every column with every storage class.
 *
 * SQLite lets any column hold any storage class (NULL, INTEGER, REAL, TEXT, BLOB), whatever its
 * declared type. What each kind accepts:
 * - `id`, `ref`: an integer (`ref` may be NULL where the column allows it);
 * - `time`: an integer number of Unix seconds from 1970-01-01 to 9999-12-31 (UTC);
 * - `count`: an integer from 0 (`dimension`: from 1);
 * - `flag`: the integer 0 or 1;
 * - `fraction`: a number from 0 to 1 (an integer or a real);
 * - `text`, `url`, `name`, `mediaType`: text (valid UTF-8); a `url` must further be an absolute
 *   http(s) URL to be published, a `name` a path segment (src/paths/names.ts), a `mediaType` a media
 *   type, `type/subtype` with optional parameters (src/render/media-type.ts): a `mediaType` that is
 *   text of another form is a wrong value, decided by the column's rule like one of another type;
 *   SQL checks only that it is text (see `storageKind`);
 * - `enum`: one of `values`.
 *
 * What a wrong value does (`rule`):
 * - `omit`: the field is left out of the documents (`fallback` says what stands in, if anything);
 * - `row`: the row is left out of the documents (a video: not published at all);
 * - `owner`: the user is not published (only columns of `users`);
 * - `sql`: decided where SQL reads it: a reference of another type joins no row, an enum or flag
 *   outside its values does not equal the one published value, a tag or category name that is not
 *   text is filtered out; the row is then left out of the documents;
 * - `order`: only SQL's ORDER BY reads it; SQLite orders any mix of storage classes (NULL, then
 *   numbers, then text, then BLOBs), so the row keeps a place in the list;
 * - `unused`: no document shows it.
 * Full builds name the values of `sql`, `owner`, `order` and `unused` columns (and of names) in one
 * scan (`SiteReader.unpublishedRows`); the others are named when a document reads them.
 * Every decision is reported, naming the table, the row, the column and what was found.
 */

export type ColumnKind = 'id' | 'ref' | 'time' | 'count' | 'dimension' | 'flag' | 'fraction' | 'text' | 'url' | 'name' | 'mediaType' | 'enum';
export type WrongValueRule = 'omit' | 'row' | 'owner' | 'sql' | 'order' | 'unused';

export interface ColumnSpec {
  readonly kind: ColumnKind;
  readonly nullable?: boolean;
  readonly rule: WrongValueRule;
  /** What stands in for an omitted value, for the documentation and messages. */
  readonly fallback?: string;
  /** The values of an `enum`. */
  readonly values?: readonly string[];
}

export interface TableSpec {
  /** The columns that name a row in messages (`id`, or the primary key of a table without one). */
  readonly key: readonly string[];
  readonly columns: Readonly<Record<string, ColumnSpec>>;
}

const id: ColumnSpec = { kind: 'id', rule: 'sql' };
const ref: ColumnSpec = { kind: 'ref', rule: 'sql' };
const optionalRef: ColumnSpec = { kind: 'ref', nullable: true, rule: 'sql' };
const omittedText = (fallback = 'empty'): ColumnSpec => ({ kind: 'text', rule: 'omit', fallback });
const optionalText: ColumnSpec = { kind: 'text', nullable: true, rule: 'omit' };
const optionalUrl: ColumnSpec = { kind: 'url', nullable: true, rule: 'omit' };
const shownFlag: ColumnSpec = { kind: 'flag', rule: 'omit', fallback: '0 (not shown)' };
const unusedTime: ColumnSpec = { kind: 'time', rule: 'unused' };

/**
 * The tables as of schema version 4. Frozen: migration 4 is generated from it, and a released
 * migration never changes (test/db/type-checks.test.ts holds it to the released text). A later
 * migration that adds columns extends a copy of it (`{ ...SITE_TABLES, ... }`) for its own checks.
 * A kind given to a column since (`file_type`'s `mediaType`) refines the kind it was released
 * with, and the migration is generated from that one (`storageKind`).
 */
export const SITE_TABLES: Readonly<Record<string, TableSpec>> = deepFreeze({
  users: {
    key: ['id'],
    columns: {
      id,
      username: { kind: 'name', rule: 'owner' },
      display_name: omittedText(),
      title: omittedText(),
      given_name: omittedText(),
      family_name: omittedText(),
      email: optionalText,
      show_email: shownFlag,
      phone: optionalText,
      show_phone: shownFlag,
      homepage_url: optionalUrl,
      avatar_url: optionalUrl,
      openid_url: optionalUrl,
      aim_chat_id: optionalText,
      yahoo_chat_id: optionalText,
      msn_chat_id: optionalText,
      icq_chat_id: optionalText,
      jabber_chat_id: optionalText,
      show_chat_ids: shownFlag,
      street_address: optionalText,
      locality: optionalText,
      region: optionalText,
      region_name: optionalText,
      postal_code: optionalText,
      country_name: optionalText,
      show_address: shownFlag,
      history_public: { kind: 'flag', rule: 'omit', fallback: '0 (history not public)' },
      state: { kind: 'enum', values: ['active', 'suspended', 'deleted'], rule: 'sql' },
      created_at: { kind: 'time', rule: 'owner' },
      updated_at: { kind: 'time', rule: 'omit', fallback: 'created_at' },
    },
  },
  online_accounts: {
    key: ['id'],
    columns: {
      id,
      user_id: ref,
      service_homepage_url: { kind: 'url', rule: 'omit' },
      account_name: { kind: 'text', rule: 'row' },
      profile_url: { kind: 'url', rule: 'omit' },
    },
  },
  // Read by SQL joins everywhere: a name that is not text is filtered out where it is read.
  categories: { key: ['id'], columns: { id, name: { kind: 'text', rule: 'sql' } } },
  tags: { key: ['id'], columns: { id, name: { kind: 'text', rule: 'sql' } } },
  interests: { key: ['user_id', 'tag_id'], columns: { user_id: ref, tag_id: ref } },
  friendships: { key: ['user_id', 'friend_id'], columns: { user_id: ref, friend_id: ref, created_at: unusedTime } },
  videos: {
    key: ['id'],
    columns: {
      id,
      public_id: { kind: 'name', rule: 'row' },
      user_id: ref,
      title: { kind: 'text', rule: 'row' },
      description: omittedText(),
      duration_seconds: { kind: 'count', nullable: true, rule: 'omit' },
      file_url: { kind: 'url', rule: 'row' },
      file_size: { kind: 'count', nullable: true, rule: 'omit' },
      file_type: { kind: 'mediaType', rule: 'omit', fallback: 'application/octet-stream' },
      width: { kind: 'dimension', nullable: true, rule: 'omit' },
      height: { kind: 'dimension', nullable: true, rule: 'omit' },
      thumbnail_url: { kind: 'url', rule: 'row' },
      thumbnail_width: { kind: 'dimension', rule: 'row' },
      thumbnail_height: { kind: 'dimension', rule: 'row' },
      captions_url: optionalUrl,
      category_id: optionalRef,
      visibility: { kind: 'enum', values: ['public', 'private'], rule: 'sql' },
      created_at: { kind: 'time', rule: 'row' },
      updated_at: { kind: 'time', rule: 'omit', fallback: 'created_at' },
    },
  },
  video_tags: { key: ['video_id', 'tag_id'], columns: { video_id: ref, tag_id: ref } },
  groups: {
    key: ['id'],
    columns: {
      id,
      slug: { kind: 'text', rule: 'row' },
      title: { kind: 'text', rule: 'row' },
      description: omittedText(),
      owner_id: ref,
      featured_video_id: optionalRef,
      hidden: { kind: 'flag', rule: 'sql' },
      created_at: { kind: 'time', rule: 'row' },
      updated_at: { kind: 'time', rule: 'omit', fallback: 'created_at' },
    },
  },
  group_members: { key: ['group_id', 'user_id'], columns: { group_id: ref, user_id: ref, joined_at: unusedTime } },
  saved_videos: {
    key: ['user_id', 'video_id'],
    columns: {
      user_id: ref,
      video_id: ref,
      position: { kind: 'count', rule: 'order' },
      saved_at: unusedTime,
    },
  },
  viewing_history: {
    key: ['id'],
    columns: { id, user_id: ref, video_id: ref, viewed_at: { kind: 'time', rule: 'order' } },
  },
  recommendations: {
    key: ['id'],
    columns: {
      id,
      user_id: ref,
      title: { kind: 'text', rule: 'row' },
      link: { kind: 'url', rule: 'row' },
      image: { kind: 'url', rule: 'row' },
      description: omittedText(),
      duration_seconds: { kind: 'count', nullable: true, rule: 'omit' },
      is_public: { kind: 'flag', rule: 'sql' },
      created_at: { kind: 'time', rule: 'row' },
      // Migration 3: moderation (docs/serve.md, "Moderating").
      status: { kind: 'enum', values: ['pending', 'approved', 'rejected'], rule: 'sql' },
      submitter_address: { kind: 'text', nullable: true, rule: 'unused' },
      reviewed_at: { kind: 'time', nullable: true, rule: 'unused' },
    },
  },
  attention_concepts: {
    key: ['user_id', 'category_id'],
    columns: {
      user_id: ref,
      category_id: ref,
      value: { kind: 'fraction', rule: 'omit', fallback: '0' },
      updated_at: { kind: 'time', nullable: true, rule: 'omit', fallback: "the user's created_at" },
    },
  },
  attention_sources: {
    key: ['id'],
    columns: {
      id,
      user_id: ref,
      video_id: ref,
      supplier_id: ref,
      value: { kind: 'fraction', rule: 'row' },
      updated_at: { kind: 'time', rule: 'row' },
    },
  },
  reading_list: {
    key: ['id'],
    columns: {
      id,
      user_id: ref,
      category_id: optionalRef,
      title: { kind: 'text', rule: 'row' },
      description: omittedText(),
      html_url: { kind: 'url', rule: 'omit' },
      xml_url: { kind: 'url', rule: 'row' },
      position: { kind: 'count', rule: 'order' },
      created_at: { kind: 'time', rule: 'row' },
      updated_at: { kind: 'time', rule: 'omit', fallback: 'created_at' },
    },
  },
} satisfies Record<string, TableSpec>);

/** The latest time a document may carry: 9999-12-31T23:59:59Z, the last second of a four-digit year. */
export const MAX_UNIX_SECONDS = 253_402_300_799;

/** Integers past 2^53 - 1 do not survive the trip to a JavaScript number: out of every integer kind's domain. */
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

export function columnSpec(table: string, column: string): ColumnSpec {
  const spec = SITE_TABLES[table]?.columns[column];
  if (spec === undefined) throw new Error(`no column ${table}.${column} in the description of the site database`);
  return spec;
}

/**
 * An SQL condition true when `expr` (a column, or `NEW.column` in a trigger) holds a value of the
 * column's kind. Only storage classes and ranges: SQL cannot tell whether text is valid UTF-8.
 */
export function typeCondition(spec: ColumnSpec, expr: string): string {
  const typed = (() => {
    switch (spec.kind) {
      case 'id':
      case 'ref':
        return `(typeof(${expr}) = 'integer' AND ${expr} BETWEEN -${MAX_SAFE} AND ${MAX_SAFE})`;
      case 'time':
        return `(typeof(${expr}) = 'integer' AND ${expr} BETWEEN 0 AND ${MAX_UNIX_SECONDS})`;
      case 'count':
        return `(typeof(${expr}) = 'integer' AND ${expr} BETWEEN 0 AND ${MAX_SAFE})`;
      case 'dimension':
        return `(typeof(${expr}) = 'integer' AND ${expr} BETWEEN 1 AND ${MAX_SAFE})`;
      case 'flag':
        return `(typeof(${expr}) = 'integer' AND ${expr} IN (0, 1))`;
      case 'fraction':
        return `(typeof(${expr}) IN ('integer', 'real') AND ${expr} BETWEEN 0 AND 1)`;
      case 'enum':
        return `(typeof(${expr}) = 'text' AND ${expr} IN (${spec.values!.map((v) => `'${v}'`).join(', ')}))`;
      case 'text':
      case 'url':
      case 'name':
      case 'mediaType':
        return `typeof(${expr}) = 'text'`;
    }
  })();
  return spec.nullable ? `(${expr} IS NULL OR ${typed})` : typed;
}

/** What a column must hold, in words, for messages. */
export function expected(spec: ColumnSpec): string {
  const what = {
    id: 'an integer',
    ref: 'an integer (a row id)',
    time: 'an integer number of Unix seconds from 0 (1970) to 253402300799 (9999)',
    count: `an integer from 0 to ${MAX_SAFE}`,
    dimension: `an integer from 1 to ${MAX_SAFE}`,
    flag: 'the integer 0 or 1',
    fraction: 'a number from 0 to 1',
    text: 'text',
    url: 'text (an absolute http(s) URL)',
    name: 'text (a path segment)',
    mediaType: 'text (a media type: type/subtype, optionally with parameters)',
    enum: `one of ${(spec.values ?? []).map((v) => `'${v}'`).join(', ')}`,
  }[spec.kind];
  return spec.nullable ? `${what} or NULL` : what;
}

/**
 * The column as migration 4 was released with it: a `mediaType` was `text` then. Its triggers
 * check no more than the storage class either way (SQL has no media-type parser); only their
 * message would differ, and a released migration does not change.
 */
export function storageKind(spec: ColumnSpec): ColumnSpec {
  return spec.kind === 'mediaType' ? { ...spec, kind: 'text' } : spec;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
