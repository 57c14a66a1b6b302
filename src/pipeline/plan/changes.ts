import type { ChangeKeys, ChangeRecord, OwnerLookups } from '../../db/change-log.js';

/**
 * Which owners' documents a set of recorded database changes affects. Pure: it reads the change
 * records and asks `OwnerLookups` about the rows as they are now; it touches no database itself,
 * so tests run it over records and lookups built in memory.
 *
 * Dependencies are tracked by OWNER, not by format: a user owns every per-user document (RSS,
 * Atom, FOAF, XSPF, APML, OPML, hCard, recommendations, ...), a video every per-video document
 * (oEmbed). An affected owner has all its documents re-rendered, so a new format needs no change
 * here as long as it reads only what the owner's bundle reads (the relations below).
 *
 * What a user's documents read: the user's own rows (accounts, interests, friendships, saved
 * videos, history, recommendations, attention, reading list, group memberships); other users seen
 * as people (friends, group owners, uploaders, attention suppliers); videos (uploads, saved, history,
 * group featured videos, attention sources) with their uploader, category and tags; every category
 * (APML lists them all). A video's documents read the video, its uploader, its category and tags.
 * Site files (the sitemap) read only the set of published names: the build renders them when an
 * affected owner gained or lost documents.
 */

/** Owners whose documents must be rendered again ('all' when every one of that kind is). */
export interface AffectedOwners {
  users: ReadonlySet<number> | 'all';
  videos: ReadonlySet<number> | 'all';
  /**
   * The site files must be rendered again whatever the owners' documents show (unknown tables).
   * Otherwise the build decides: they are rendered when an owner gained or lost a document, since
   * they list only published names (src/pipeline/run-build.ts).
   */
  siteFiles: boolean;
  /** Tables the change log named that this code does not know: everything is rendered again. */
  unknownTables: readonly string[];
}

/** Tables whose rows belong to one user through `user_id` and are read only by that user's documents. */
const USER_ROWS = new Set([
  'online_accounts',
  'interests',
  'friendships',
  'group_members',
  'saved_videos',
  'viewing_history',
  'recommendations',
  'attention_concepts',
  'attention_sources',
  'reading_list',
]);

function id(keys: ChangeKeys | null, name: string): number | null {
  const value = keys?.[name];
  return typeof value === 'number' ? value : null;
}

function differs(change: ChangeRecord, name: string): boolean {
  return change.op !== 'update' || change.old?.[name] !== change.new?.[name];
}

/**
 * A recommendation change whose row is unpublished on both sides (migration 3 records the status:
 * a pending row received, rejected or deleted) shows in no document. Records from before that
 * migration carry no status and count as changes.
 */
function neverPublished(change: ChangeRecord): boolean {
  const sides = [change.old, change.new].filter((keys) => keys !== null);
  return sides.every((keys) => typeof keys.status === 'string' && keys.status !== 'approved');
}

export function affectedOwners(changes: Iterable<ChangeRecord>, lookups: OwnerLookups): AffectedOwners {
  const users = new Set<number>();
  /** Users whose data other users' documents show (name, picture, state...) changed. */
  const people = new Set<number>();
  const videos = new Set<number>();
  const groups = new Set<number>();
  const tags = new Set<number>();
  const unknown = new Set<string>();
  let categoriesChanged = false;
  const categories = new Set<number>();

  const add = (set: Set<number>, value: number | null) => {
    if (value !== null) set.add(value);
  };
  const both = (change: ChangeRecord, name: string, set: Set<number>) => {
    add(set, id(change.old, name));
    add(set, id(change.new, name));
  };

  for (const change of changes) {
    const { table } = change;
    if (table === 'recommendations' && neverPublished(change)) continue;
    if (USER_ROWS.has(table)) {
      both(change, 'user_id', users);
      continue;
    }
    switch (table) {
      case 'users':
        both(change, 'id', users);
        if (change.op !== 'update' || change.new?.person_changed === 1 || differs(change, 'username') || differs(change, 'state')) {
          both(change, 'id', people);
        }
        break;
      case 'videos':
        both(change, 'id', videos);
        // The uploader before and after: a video moved to another user leaves one feed for another.
        both(change, 'user_id', users);
        break;
      case 'video_tags':
        both(change, 'video_id', videos);
        break;
      case 'groups':
        both(change, 'id', groups);
        break;
      case 'categories':
        // APML lists every category, so every user's APML names it.
        categoriesChanged = true;
        both(change, 'id', categories);
        break;
      case 'tags':
        both(change, 'id', tags);
        break;
      default:
        unknown.add(table);
    }
  }

  if (unknown.size > 0) return { users: 'all', videos: 'all', siteFiles: true, unknownTables: [...unknown].sort() };

  const ids = (set: ReadonlySet<number>) => [...set];
  const addAll = (set: Set<number>, values: readonly number[]) => {
    for (const value of values) set.add(value);
  };

  // Expand: first to videos (a person's uploads, a category's or a tag's videos)...
  if (people.size > 0) addAll(videos, lookups.videosUploadedBy(ids(people)));
  if (categories.size > 0) addAll(videos, lookups.videosInCategories(ids(categories)));
  if (tags.size > 0) addAll(videos, lookups.videosTagged(ids(tags)));
  // ...then to groups (a person's groups name the owner, a featured video is shown)...
  if (people.size > 0) addAll(groups, lookups.groupsOwnedBy(ids(people)));
  if (videos.size > 0) addAll(groups, lookups.groupsFeaturing(ids(videos)));
  // ...then to the users whose documents read any of them.
  for (const person of people) users.add(person);
  if (people.size > 0) {
    addAll(users, lookups.usersBefriending(ids(people)));
    addAll(users, lookups.usersSuppliedBy(ids(people)));
  }
  if (videos.size > 0) {
    addAll(users, lookups.uploadersOf(ids(videos)));
    addAll(users, lookups.usersReferencingVideos(ids(videos)));
  }
  if (groups.size > 0) addAll(users, lookups.membersOfGroups(ids(groups)));
  if (tags.size > 0) addAll(users, lookups.usersInterestedIn(ids(tags)));

  return { users: categoriesChanged ? 'all' : users, videos, siteFiles: false, unknownTables: [] };
}

/** How many owners an `AffectedOwners` names, for the summary. */
export function countOwners(affected: AffectedOwners): { users: number | 'all'; videos: number | 'all' } {
  return {
    users: affected.users === 'all' ? 'all' : affected.users.size,
    videos: affected.videos === 'all' ? 'all' : affected.videos.size,
  };
}
