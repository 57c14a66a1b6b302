import { sweepTree } from './prune/sweep-tree.js';
import type { Encoding } from '../paths/compression.js';
import type { BuildRun } from './build-run.js';
import type { AffectedOwners } from './plan/changes.js';
import type { BuildPlan } from './plan/incremental.js';
import { ownsSiteFiles, type ShardSpec } from './plan/shard.js';
import { describeCollision, nameCollisions } from './read/name-collisions.js';
import { checkRemovals, type RemovalGuard } from './prune/removal-guard.js';
import { publishedNames, type OwnerSelection } from './read/read-owners.js';

/**
 * What a build goes through, once run-build.ts has planned it: everything in its scope (a full or
 * partial build), or only the owners the recorded changes affect (an incremental one). Both yield
 * between owners (BuildRun).
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
  /** Leave site-file work that only moves `lastmod`s to a later build (BuildOptions.deferLastmods). */
  deferLastmods?: boolean;
}

/**
 * The removal guard, before the first removal and before the site files are rendered (a sitemap
 * that no longer lists the site is as bad as the removal): counts the owners' documents this build
 * is about to remove (site files are rendered again, not removed wholesale).
 */
function guardRemovals(run: BuildRun, options: ScopeOptions, ...stale: Array<() => Iterable<string>>): void {
  if (options.removalGuard === undefined) return;
  let removing = 0;
  for (const paths of stale) for (const path of paths()) if ((run.state.previous(path)?.ownerId ?? null) !== null) removing++;
  checkRemovals(removing, () => run.state.count(), options.removalGuard);
}

/** Every owner in the build's scope, the site files, and what an earlier build wrote in that scope that this one did not. */
export function* buildEverything(run: BuildRun, plan: BuildPlan, options: ScopeOptions): Generator<void> {
  const { reader, state, formats } = run;
  const whole = plan.mode === 'full' && options.user === undefined;
  // Rows SQL leaves out for a value of the wrong type are named once, before the documents.
  if (whole) reader.unpublishedRows();
  const every: OwnerSelection = { every: true, ofUser: options.user };
  yield* run.users(formats.user.length > 0 ? every : 'none');
  yield* run.videos(formats.video.length > 0 ? every : 'none');
  const staleScope = { formats: options.formats, user: options.user };
  guardRemovals(run, options, () => state.stale(staleScope));
  // After the documents, so the sitemap lists none that failed.
  yield* run.siteFiles();
  if (run.formats.site.length > 0) state.setLastmodsOwed(null);
  // Names that would be one directory on macOS or Windows, every published row of them named.
  if (whole && ownsSiteFiles(options.shard)) {
    for (const group of nameCollisions(() => publishedNames(reader, run.site.paths))) run.tally.nameCollision(describeCollision(group));
  }
  run.prune(state.stale(staleScope));
  const { writer } = run.target;
  if (plan.mode === 'full' && options.sweep === true && options.user === undefined && writer.root !== undefined) {
    writer.flush?.();
    sweepTree({ root: writer.root, writer, state, paths: run.site.paths, formsOnDisk: options.compression, shard: options.shard }, (path) => run.tally.removed(path));
    state.swept();
  }
  if (plan.mode === 'full') {
    state.setSiteFilesStale(false);
    // Every document was seen: the forms beside them are now the configured ones (unless one
    // failed, whose old file and forms were kept: the next full build looks again).
    if (run.tally.report.failedCount === 0) state.setCompression(options.compression);
  }
  // A partial build does not render the site files: the next build must, if names came or went.
  else if (run.newPaths || run.pruned > 0) state.setSiteFilesStale(true);
}

/**
 * The affected owners, and the site files when the published names may have changed (an owner
 * gained or lost a document: created, renamed, published or withdrawn) or a listed document's
 * `lastmod` moved, and the paths they no longer produce. Returns whether the site files were
 * rendered, or left for a later build (`deferLastmods`).
 */
export function* buildAffected(run: BuildRun, affected: AffectedOwners, options: ScopeOptions): Generator<void, 'rendered' | 'deferred' | 'none'> {
  const { state, formats } = run;
  // The site files list every owner of a kind that is 'all' anyway (below): only the others are followed.
  run.followRelisted({ user: affected.users !== 'all', video: affected.videos !== 'all' });
  const selection = (owners: ReadonlySet<number> | 'all', formatCount: number): OwnerSelection =>
    owners !== 'all' ? { ids: owners } : formatCount > 0 ? { every: true } : 'none';
  yield* run.users(selection(affected.users, formats.user.length));
  yield* run.videos(selection(affected.videos, formats.video.length));
  const staleOf = (kind: 'user' | 'video', owners: ReadonlySet<number> | 'all') =>
    owners === 'all' ? [() => state.staleOwned(kind)] : [...owners].map((id) => () => state.staleOwned(kind, id));
  guardRemovals(run, options, ...staleOf('user', affected.users), ...staleOf('video', affected.videos));
  const pruneOwned = (kind: 'user' | 'video', owners: ReadonlySet<number> | 'all') => {
    if (owners === 'all') run.prune(state.staleOwned(kind));
    else for (const id of owners) if (run.prune(state.staleOwned(kind, id)) > 0) run.relist({ kind, id });
  };
  pruneOwned('user', affected.users);
  pruneOwned('video', affected.videos);
  // A partial build since the last one may have added or removed documents without them.
  // In a sharded build, another shard's owners may gain or lose documents unseen here: the shard
  // that writes the site files renders them whenever anything changed (unchanged bytes are not
  // rewritten).
  const sharded = options.shard !== undefined && options.shard.count > 1 && formats.site.length > 0;
  const anyOwner = affected.users === 'all' || affected.users.size > 0 || affected.videos === 'all' || affected.videos.size > 0;
  const listingMoved = affected.siteFiles || run.newPaths || run.pruned > 0 || options.siteFilesStale || (sharded && anyOwner);
  const owed = formats.site.length > 0 ? state.lastmodsOwed() : null;
  // The sitemap describes each video from its row (title, description, uploader): an affected
  // video's part may change even where none of its documents did.
  const described = affected.videos === 'all' ? new Set<number>() : affected.videos;
  if (!listingMoved && !run.lastmodMoved && described.size === 0 && owed === null) return 'none';
  // The owners this build relisted (and those earlier builds owe) are the only ones whose listing
  // may have changed, unless earlier builds left the site files behind (stale, another shard's
  // owners, unknown tables).
  const relistedOnly = !(affected.siteFiles || options.siteFilesStale || sharded);
  const bothFollowed = affected.users !== 'all' && affected.videos !== 'all';
  if (!listingMoved && options.deferLastmods === true && relistedOnly && bothFollowed) {
    state.setLastmodsOwed({ user: union(owed?.user, run.relisted.user), video: union(owed?.video, run.relisted.video, described) });
    return 'deferred';
  }
  const users = affected.users === 'all' ? 'all' : union(owed?.user, run.relisted.user);
  const videos = affected.videos === 'all' ? 'all' : union(owed?.video, run.relisted.video, described);
  yield* run.siteFiles(relistedOnly ? { users, videos } : undefined);
  run.prune(state.staleOwned('site'));
  state.setSiteFilesStale(false);
  state.setLastmodsOwed(null);
  return 'rendered';
}

function union(...sets: Array<ReadonlySet<number> | undefined>): Set<number> {
  const all = new Set<number>();
  for (const set of sets) if (set !== undefined) for (const id of set) all.add(id);
  return all;
}
