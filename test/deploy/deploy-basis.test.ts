import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chooseBasis, type DeployBasis } from '../../src/deploy/deploy-basis.js';
import { defaultStateFile } from '../../src/pipeline/build-state.js';
import { cli } from '../helpers/cli.js';
import { createDemoDb } from '../helpers/site-fixture.js';
import { useTempDir } from '../helpers/temp-dir.js';

/**
 * When a deploy may send only what the builds since the last deploy changed: not when they
 * changed more documents than an incremental deploy holds, which go through the full compare.
 */

describe('chooseBasis', () => {
  it('sends a change of up to the bound incrementally, and a larger one through the full compare, saying why', () => {
    const dir = useTempDir('vidfeeds-basis-');
    const site = createDemoDb({ users: 4, seed: 5 });
    const out = join(dir, 'out');
    const build = () => expect(cli(['build', '--db', site.file, '--out', out]).code).toBe(0);
    build();
    const stateFile = defaultStateFile(out);
    const basis = (known: Parameters<typeof chooseBasis>[0]['known'], incrementalMost?: number): DeployBasis => {
      const chosen = chooseBasis({ stateFile, out, config: 'c', verify: false, known, incrementalMost });
      chosen.state?.close();
      return chosen;
    };
    const first = basis(undefined);
    expect(first.mode).toBe('full');
    const known = { headers: 'h', etagsAreMd5: true, published: first.published! };

    // A title shows in several documents of its video and its owner's.
    site.db.prepare(`UPDATE videos SET title = 'Retitled' WHERE id = (SELECT min(id) FROM videos WHERE visibility = 'public')`).run();
    build();
    const small = basis(known);
    expect(small.mode).toBe('incremental');
    const bounded = basis(known, 1);
    expect(bounded.mode).toBe('full');
    expect(bounded.mode === 'full' && bounded.reason).toMatch(/^the builds after build 1 changed or removed more than 1 documents: compared a page at a time, not held$/);
    // The full compare still records what it publishes, for the next deploy to be incremental again.
    expect(bounded.published).toMatchObject({ stateId: first.published!.stateId, build: 2 });
    site.cleanup();
  });
});
