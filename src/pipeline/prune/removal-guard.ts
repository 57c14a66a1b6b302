import { EXIT, VidfeedsError } from '../../config/vidfeeds-error.js';

/**
 * The guard against mass removal: a build that would remove more than a share of the published
 * documents stops before it removes anything (an emptied table, a broken import or a wrong --db
 * would otherwise empty the site). Removals below a minimum count never stop it, so that a small
 * site can lose a user. `--allow-removals` (no guard) lets such a build through.
 */
export interface RemovalGuard {
  /** The largest share (0 to 1) of the published documents a build may remove. */
  maxShare: number;
  /** Removals fewer than this never stop a build. */
  minimum: number;
}

/** A build the guard stopped: nothing was removed. Exit code 1, as a failed build. */
export class RemovalGuardError extends VidfeedsError {
  constructor(
    readonly removing: number,
    readonly published: number,
    guard: RemovalGuard,
  ) {
    super(EXIT.failed, {
      what:
        `the build would remove ${removing} of ${published} published documents (${percent(removing / published)}), ` +
        `more than maxRemovalShare allows (${percent(guard.maxShare)}, and at least ${guard.minimum}): nothing was removed`,
      hint: 'if the database is right, build again with --allow-removals (or raise maxRemovalShare in the configuration)',
    });
  }
}

/** Throws RemovalGuardError when `removing` of `published()` documents is more than the guard allows. */
export function checkRemovals(removing: number, published: () => number, guard: RemovalGuard | undefined): void {
  if (guard === undefined || removing === 0 || removing < guard.minimum) return;
  // Counted only here: counting the records reads the whole state.
  const total = published();
  if (total > 0 && removing / total > guard.maxShare) throw new RemovalGuardError(removing, total, guard);
}

function percent(share: number): string {
  return `${Number((share * 100).toFixed(1))}%`;
}
