import { describe, expect, it } from 'vitest';
import { affectedOwners } from '../../src/pipeline/plan/changes.js';
import type { ChangeRecord, OwnerLookups } from '../../src/db/change-log.js';

/**
 * The dependency rules, over change records and look-ups built in memory (no database): a tiny site
 * described as relations, and the owners each kind of change must reach.
 */

interface World {
  friendships?: Array<[user: number, friend: number]>;
  saved?: Array<[user: number, video: number]>;
  sources?: Array<[user: number, video: number, supplier: number]>;
  interests?: Array<[user: number, tag: number]>;
  members?: Array<[group: number, user: number]>;
  groups?: Array<[group: number, owner: number, featured: number | null]>;
  videos?: Array<[video: number, uploader: number, category: number | null]>;
  videoTags?: Array<[video: number, tag: number]>;
}

function lookups(world: World): OwnerLookups {
  const pick = <T extends unknown[]>(rows: T[] | undefined, match: (row: T) => boolean, value: (row: T) => number) => [
    ...new Set((rows ?? []).filter(match).map(value)),
  ];
  const has = (ids: readonly number[]) => (id: number | null) => id !== null && ids.includes(id);
  return {
    usersBefriending: (ids) => pick(world.friendships, ([, f]) => has(ids)(f), ([u]) => u),
    usersReferencingVideos: (ids) => [
      ...new Set([...pick(world.saved, ([, v]) => has(ids)(v), ([u]) => u), ...pick(world.sources, ([, v]) => has(ids)(v), ([u]) => u)]),
    ],
    usersSuppliedBy: (ids) => pick(world.sources, ([, , s]) => has(ids)(s), ([u]) => u),
    usersInterestedIn: (ids) => pick(world.interests, ([, t]) => has(ids)(t), ([u]) => u),
    membersOfGroups: (ids) => pick(world.members, ([g]) => has(ids)(g), ([, u]) => u),
    groupsOwnedBy: (ids) => pick(world.groups, ([, o]) => has(ids)(o), ([g]) => g),
    groupsFeaturing: (ids) => pick(world.groups, ([, , f]) => has(ids)(f), ([g]) => g),
    videosUploadedBy: (ids) => pick(world.videos, ([, u]) => has(ids)(u), ([v]) => v),
    videosInCategories: (ids) => pick(world.videos, ([, , c]) => has(ids)(c), ([v]) => v),
    videosTagged: (ids) => pick(world.videoTags, ([, t]) => has(ids)(t), ([v]) => v),
    uploadersOf: (ids) => pick(world.videos, ([v]) => has(ids)(v), ([, u]) => u),
  };
}

let seq = 0;
const insert = (table: string, keys: Record<string, number | string | null>): ChangeRecord => ({ seq: ++seq, table, op: 'insert', old: null, new: keys });
const remove = (table: string, keys: Record<string, number | string | null>): ChangeRecord => ({ seq: ++seq, table, op: 'delete', old: keys, new: null });
const update = (table: string, old: Record<string, number | string | null>, now: Record<string, number | string | null>): ChangeRecord => ({
  seq: ++seq,
  table,
  op: 'update',
  old,
  new: now,
});

const sorted = (owners: ReadonlySet<number> | 'all') => (owners === 'all' ? 'all' : [...owners].sort((a, b) => a - b));

describe('affected owners', () => {
  it('a friend removed reaches only the user whose FOAF listed the friend', () => {
    const result = affectedOwners([remove('friendships', { user_id: 1, friend_id: 2 })], lookups({}));
    expect(sorted(result.users)).toEqual([1]);
    expect(sorted(result.videos)).toEqual([]);
    expect(result.siteFiles).toBe(false);
  });

  it('a renamed user reaches their own documents, whoever shows them, and their videos', () => {
    const world: World = {
      friendships: [[5, 1], [1, 6]],
      groups: [[10, 1, null]],
      members: [[10, 7], [10, 8]],
      videos: [[100, 1, null], [101, 2, null]],
      saved: [[9, 100]],
      sources: [[11, 101, 1]],
    };
    const result = affectedOwners([update('users', { id: 1, username: 'a', state: 'active' }, { id: 1, username: 'b', state: 'active', person_changed: 0 })], lookups(world));
    // 5 lists 1 as a friend; 7, 8 are in 1's group; 9 saved 1's video; 11 has 1 as attention supplier.
    expect(sorted(result.users)).toEqual([1, 5, 7, 8, 9, 11]);
    expect(sorted(result.videos)).toEqual([100]);
  });

  it("a change to what only the user's own documents show stays with the user", () => {
    const world: World = { friendships: [[5, 1]], videos: [[100, 1, null]], saved: [[9, 100]] };
    const result = affectedOwners([update('users', { id: 1, username: 'a', state: 'active' }, { id: 1, username: 'a', state: 'active', person_changed: 0 })], lookups(world));
    expect(sorted(result.users)).toEqual([1]);
    expect(sorted(result.videos)).toEqual([]);
    expect(result.siteFiles).toBe(false);
  });

  it('a suspended user reaches the same documents as a renamed one', () => {
    const world: World = { friendships: [[5, 1]], videos: [[100, 1, null]], saved: [[9, 100]] };
    const result = affectedOwners([update('users', { id: 1, username: 'a', state: 'active' }, { id: 1, username: 'a', state: 'suspended', person_changed: 0 })], lookups(world));
    expect(sorted(result.users)).toEqual([1, 5, 9]);
    expect(sorted(result.videos)).toEqual([100]);
  });

  it('a video moved to another user reaches both uploaders, its readers and its groups', () => {
    const world: World = { videos: [[100, 2, null]], saved: [[9, 100]], groups: [[10, 3, 100]], members: [[10, 7]] };
    const result = affectedOwners(
      [update('videos', { id: 100, public_id: 'v', user_id: 1, category_id: null, visibility: 'public' }, { id: 100, public_id: 'v', user_id: 2, category_id: null, visibility: 'public' })],
      lookups(world),
    );
    expect(sorted(result.users)).toEqual([1, 2, 7, 9]);
    expect(sorted(result.videos)).toEqual([100]);
  });

  it('a deleted video reaches its former uploader from the recorded keys', () => {
    const result = affectedOwners([remove('videos', { id: 100, public_id: 'v', user_id: 1, category_id: null, visibility: 'public' })], lookups({}));
    expect(sorted(result.users)).toEqual([1]);
    expect(sorted(result.videos)).toEqual([100]);
  });

  it("a group's featured video changed reaches its members, not the videos' readers", () => {
    const world: World = { members: [[10, 7], [10, 8]], groups: [[10, 3, 101]] };
    const result = affectedOwners([update('groups', { id: 10, owner_id: 3, featured_video_id: 100 }, { id: 10, owner_id: 3, featured_video_id: 101 })], lookups(world));
    expect(sorted(result.users)).toEqual([7, 8]);
    expect(result.siteFiles).toBe(false);
  });

  it('a renamed category reaches every user (APML lists them all) and its videos', () => {
    const world: World = { videos: [[100, 1, 4], [101, 2, 5]] };
    const result = affectedOwners([update('categories', { id: 4 }, { id: 4 })], lookups(world));
    expect(result.users).toBe('all');
    expect(sorted(result.videos)).toEqual([100]);
  });

  it('a renamed tag reaches its videos, their readers and the users interested in it', () => {
    const world: World = { videos: [[100, 1, null]], videoTags: [[100, 3]], interests: [[6, 3]], saved: [[9, 100]] };
    const result = affectedOwners([update('tags', { id: 3 }, { id: 3 })], lookups(world));
    expect(sorted(result.users)).toEqual([1, 6, 9]);
    expect(sorted(result.videos)).toEqual([100]);
  });

  it('a table it does not know makes everything affected, and says which', () => {
    const result = affectedOwners([insert('playlists', { id: 1 })], lookups({}));
    expect(result).toEqual({ users: 'all', videos: 'all', siteFiles: true, unknownTables: ['playlists'] });
  });

  it('asks each look-up once for all ids, not once per row', () => {
    const calls: string[] = [];
    const base = lookups({});
    const counting = Object.fromEntries(
      Object.entries(base).map(([name, fn]) => [name, (ids: readonly number[]) => (calls.push(name), (fn as (ids: readonly number[]) => number[])(ids))]),
    ) as unknown as OwnerLookups;
    const changes = Array.from({ length: 50 }, (_, i) => update('videos', { id: i, public_id: `v${i}`, user_id: 1, category_id: null, visibility: 'public' }, { id: i, public_id: `v${i}`, user_id: 1, category_id: null, visibility: 'public' }));
    affectedOwners(changes, counting);
    expect(calls.filter((c) => c === 'usersReferencingVideos')).toHaveLength(1);
    expect(calls.filter((c) => c === 'groupsFeaturing')).toHaveLength(1);
  });
});
