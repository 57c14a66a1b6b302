import type { BuildState } from '../build-state.js';
import { EXIT, VidfeedsError } from '../../config/vidfeeds-error.js';
import { showShard, type ShardSpec } from '../../shard/shard.js';

/** A build state used for another part of the site than the one it covers. Exit code 2. */
export class ShardStateError extends VidfeedsError {
  constructor(message: string) {
    super(EXIT.usage, { what: message });
  }
}

/**
 * A state knows which part of the site it covers: building another part with it would prune the
 * other part's files as gone. It is recorded on first use and checked after, before any file is
 * touched.
 */
export function checkStateShard(state: BuildState, stateFile: string, shard: ShardSpec | undefined): void {
  const part = shard === undefined || shard.count === 1 ? 'all' : showShard(shard);
  // A state from before shards existed covers the whole site.
  const recorded = state.getMeta('shard') ?? (state.isEmpty() ? null : 'all');
  if (recorded !== null && recorded !== part) {
    const was = recorded === 'all' ? 'the whole site' : `shard ${recorded}`;
    const now = part === 'all' ? 'the whole site' : `shard ${part}`;
    throw new ShardStateError(
      `build state ${stateFile} belongs to ${was}, this build is ${now}: give each shard its own --state ` +
        '(the default does), or start over with a new state file and output directory',
    );
  }
  if (recorded !== part) state.setMeta('shard', part);
}
