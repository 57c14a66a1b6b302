import type { ChangeLogPosition } from '../db/change-log.js';
import type { Encoding } from '../paths/compression.js';
import type { BuildRun, OwnersToRead, SiteChanges } from './build-run.js';
import type { BuildState } from './build-state.js';
import { countOwners, type AffectedOwners } from './plan/changes.js';
import type { BuildPlan } from './plan/incremental.js';
import type { ShardSpec } from '../shard/shard.js';
import { checkRemovals, type RemovalGuard } from './prune/removal-guard.js';
import type { PruneWork } from './prune/prune-stale.js';
import type { OwnerSelection } from './read/read-owners.js';

/**
 * What a build goes through, once run-build.ts has planned it: everything in its scope (a full or
 * partial build), or only the owners the recorded changes affect (an incremental one); whether the
 * site files are rendered, all of them, the parts of some owners, or left for a later build; what
 * the prune stage removes; and what the state says of it for the next build.
 */

export interface ScopeOptions {
  user?: string;
  shard?: ShardSpec;
  /** The format names the build renders. */
  formats: ReadonlySet<string>;
  /** The site files were left stale by an earlier build. */
  siteFilesStale: boolean;
  /** The encodings configured: recorded once a full build has seen every document. */
  compression: readonly Encoding[];
  /** Stop before the first removal when the build would remove too much (prune/removal-guard.ts). */
  removalGuard?: RemovalGuard;
  /** The tree may hold files no record names (a killed build, a set-aside state): a full build sweeps it. */
  sweep?: boolean;
  /** `build --full` of every format and user: the stray-file repair. */
  strays?: boolean;
  /** Leave site-file work that only moves `lastmod`s to a later build (BuildOptions.deferLastmods). */
  deferLastmods?: boolean;
}

/** The plan of a build: its mode, the change log's position in its snapshot, and for an incremental one the owners the changes affect. */
export interface Planned {
  plan: BuildPlan;
  log?: ChangeLogPosition;
  affected?: AffectedOwners;
}

/** The owners' documents the prune stage removes, read before anything is removed. */
export interface StaleOwners {
  paths: Array<() => Iterable<string>>;
  /** An owner loses a document: the published names change. */
  losing: boolean;
}

export type SiteFilesPlan =
  | { kind: 'render'; changes?: SiteChanges }
  | { kind: 'deferred'; owed: { user: Set<number>; video: Set<number> } }
  | { kind: 'none' };

/** The owners a build reads: every one in its scope, or those the changes affect. */
export function ownersToRead(run: BuildRun, { plan, affected }: Planned, options: ScopeOptions): OwnersToRead {
  const { formats } = run;
  if (affected === undefined) {
    const every: OwnerSelection = { every: true, ofUser: options.user };
    const whole = plan.mode === 'full' && options.user === undefined;
    // A partial build without the site files owes the dates of the documents it changes (settle).
    if (plan.mode === 'partial' && formats.site.length === 0) run.followRelisted({ user: true, video: true });
    return { users: formats.user.length > 0 ? every : 'none', videos: formats.video.length > 0 ? every : 'none', whole };
  }
  // The site files list every owner of a kind that is 'all' anyway (siteFilesPlan): only the others are followed.
  run.followRelisted({ user: affected.users !== 'all', video: affected.videos !== 'all' });
  const selection = (owners: ReadonlySet<number> | 'all', formatCount: number): OwnerSelection =>
    owners !== 'all' ? { ids: owners } : formatCount > 0 ? { every: true } : 'none';
  return { users: selection(affected.users, formats.user.length), videos: selection(affected.videos, formats.video.length), whole: false };
}

/**
 * What an earlier build wrote in the build's scope that this one did not, once the owners'
 * documents are written. The removal guard counts it here, before the first removal and before the
 * site files are rendered (a sitemap that no longer lists the site is as bad as the removal): the
 * owners' documents this build is about to remove (site files are rendered again, not removed
 * wholesale). An affected owner that loses a document is relisted.
 */
export function staleOwners(run: BuildRun, { affected }: Planned, options: ScopeOptions): StaleOwners {
  const { state } = run;
  const stale: StaleOwners = { paths: [], losing: false };
  // Read at the prune, after the site files: a site format that failed then keeps its files.
  const formats = () => (run.failedSiteFormats.size === 0 ? options.formats : new Set([...options.formats].filter((f) => !run.failedSiteFormats.has(f))));
  if (affected === undefined) stale.paths.push(() => state.stale({ formats: formats(), user: options.user }));
  else {
    for (const [kind, owners] of [['user', affected.users], ['video', affected.videos]] as const) {
      if (owners === 'all') {
        const ofKind = staleOfKind(state, kind);
        stale.paths.push(ofKind.paths);
        if (ofKind.any) stale.losing = true;
        continue;
      }
      for (const id of owners) {
        const paths = [...state.staleOwned(kind, id)];
        if (paths.length === 0) continue;
        stale.paths.push(() => paths);
        stale.losing = true;
        run.relist({ kind, id });
      }
    }
  }
  if (options.removalGuard !== undefined) {
    let removing = 0;
    for (const paths of stale.paths) for (const path of paths()) if ((state.previous(path)?.ownerId ?? null) !== null) removing++;
    checkRemovals(removing, () => state.count(), options.removalGuard);
  }
  return stale;
}

/**
 * The site files of a build: all of them in a full or partial one (after the documents, so the
 * sitemap lists none that failed). An incremental build renders them when the published names may
 * have changed (an owner gained or lost a document: created, renamed, published or withdrawn) or a
 * listed document's `lastmod` moved, or leaves them for a later build (`deferLastmods`).
 */
export function siteFilesPlan(run: BuildRun, { affected }: Planned, stale: StaleOwners, options: ScopeOptions): SiteFilesPlan {
  if (affected === undefined) return { kind: 'render' };
  const { state, formats } = run;
  // A partial build since the last one may have added or removed documents without them.
  // In a sharded build, another shard's owners may gain or lose documents unseen here: the shard
  // that writes the site files renders them whenever anything changed (unchanged bytes are not
  // rewritten).
  const sharded = options.shard !== undefined && options.shard.count > 1 && formats.site.length > 0;
  const anyOwner = affected.users === 'all' || affected.users.size > 0 || affected.videos === 'all' || affected.videos.size > 0;
  const listingMoved = affected.siteFiles || run.newPaths || stale.losing || options.siteFilesStale || (sharded && anyOwner);
  const owed = formats.site.length > 0 ? state.lastmodsOwed() : null;
  // The sitemap describes each video from its row (title, description, uploader): an affected
  // video's part may change even where none of its documents did.
  const described = affected.videos === 'all' ? new Set<number>() : affected.videos;
  if (!listingMoved && !run.lastmodMoved && described.size === 0 && owed === null) return { kind: 'none' };
  // The owners this build relisted (and those earlier builds owe) are the only ones whose listing
  // may have changed, unless earlier builds left the site files behind (stale, another shard's
  // owners, unknown tables).
  const relistedOnly = !(affected.siteFiles || options.siteFilesStale || sharded);
  const bothFollowed = affected.users !== 'all' && affected.videos !== 'all';
  if (!listingMoved && options.deferLastmods === true && relistedOnly && bothFollowed) {
    return { kind: 'deferred', owed: { user: union(owed?.user, run.relisted.user), video: union(owed?.video, run.relisted.video, described) } };
  }
  const users = affected.users === 'all' ? 'all' : union(owed?.user, run.relisted.user);
  const videos = affected.videos === 'all' ? 'all' : union(owed?.video, run.relisted.video, described);
  return { kind: 'render', ...(relistedOnly ? { changes: { users, videos } } : {}) };
}

/** What the prune stage removes: the owners' stale documents, the stale site files, the sweep and the stray files. */
export function pruneWork(run: BuildRun, { plan, affected }: Planned, stale: StaleOwners, siteFiles: SiteFilesPlan, options: ScopeOptions): PruneWork {
  const siteStale = affected !== undefined && siteFiles.kind === 'render' ? [() => run.state.staleSite(run.failedSiteFormats)] : [];
  const sweep = plan.mode === 'full' && options.sweep === true && options.user === undefined;
  return { stale: [...stale.paths, ...siteStale], ...(sweep ? { sweep: { formsOnDisk: options.compression } } : {}), strays: options.strays === true };
}

/** What the state says of the site files and the compressed forms after the build, for the next one. */
export function settle(run: BuildRun, { plan, affected }: Planned, siteFiles: SiteFilesPlan, pruned: number, options: ScopeOptions): void {
  const { state, tally } = run;
  if (affected !== undefined) {
    tally.report.owners = {
      ...countOwners(affected),
      siteFiles: siteFiles.kind === 'render',
      ...(siteFiles.kind === 'deferred' ? { lastmodsDeferred: true } : {}),
      unknownTables: affected.unknownTables,
    };
    // As a full build forgets the entries of videos gone (below), for the videos this one followed.
    if (options.shard === undefined || options.shard.count === 1) {
      state.forgetGoneEntries(affected.videos === 'all' ? undefined : affected.videos);
    }
    if (siteFiles.kind === 'deferred') state.setLastmodsOwed(siteFiles.owed);
    if (siteFiles.kind !== 'render') return;
    state.setSiteFilesStale(false);
    state.setLastmodsOwed(null);
    return;
  }
  if (run.formats.site.length > 0) state.setLastmodsOwed(null);
  if (plan.mode === 'full') {
    state.setSiteFilesStale(false);
    // Every video's outputs are this build's: an entry of none is a video gone. A shard's state
    // holds its own videos' outputs only, while its sitemap lists them all.
    if (options.shard === undefined || options.shard.count === 1) state.forgetGoneEntries();
    // Every document was seen: the forms beside them are now the configured ones (unless one
    // failed, whose old file and forms were kept: the next full build looks again).
    if (tally.report.failedCount === 0) state.setCompression(options.compression);
  }
  // A partial build does not render the site files: the next build must, if names came or went,
  // and must date what it changed (the next build finds those documents unchanged).
  else if (run.newPaths || pruned > 0) state.setSiteFilesStale(true);
  else if (run.lastmodMoved && run.formats.site.length === 0) {
    const owed = state.lastmodsOwed();
    state.setLastmodsOwed({ user: union(owed?.user, run.relisted.user), video: union(owed?.video, run.relisted.video) });
  }
}

/**
 * The stale documents of every owner of a kind: whether there is one, read by its first page only,
 * and then the paths from that same page on, so the prune holds no more of them than it did.
 */
function staleOfKind(state: BuildState, kind: 'user' | 'video'): { any: boolean; paths: () => Iterable<string> } {
  let held: Generator<string> | null = state.staleOwned(kind);
  const first = held.next();
  if (first.done === true) return { any: false, paths: () => state.staleOwned(kind) };
  return {
    any: true,
    paths: () => {
      if (held === null) return state.staleOwned(kind);
      const rest = held;
      held = null;
      return prepend(first.value, rest);
    },
  };
}

function* prepend(first: string, rest: Iterable<string>): Generator<string> {
  yield first;
  yield* rest;
}

function union(...sets: Array<ReadonlySet<number> | undefined>): Set<number> {
  const all = new Set<number>();
  for (const set of sets) if (set !== undefined) for (const id of set) all.add(id);
  return all;
}
