import { describe, expect, it } from 'vitest';
import { stagesOf, type Profile, type ProfileNode } from '../../src/bench/stages.js';

/**
 * `node dist/bench/stages.js` files a CPU profile's samples under the build's stages by the modules
 * on their stacks (src/bench/stages.ts); the module paths are those of the compiled tree, so a
 * folder renamed under src/ must be renamed there too (src/build/ became src/pipeline/).
 */
function profileOf(stacks: Array<{ frames: Array<[functionName: string, url: string]>; ms: number }>): Profile {
  const nodes: ProfileNode[] = [{ id: 1, callFrame: { functionName: '(root)', url: '' }, children: [] }];
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  for (const { frames, ms } of stacks) {
    let parent = nodes[0]!;
    for (const [functionName, url] of frames) {
      const node: ProfileNode = { id: nodes.length + 1, callFrame: { functionName, url }, children: [] };
      parent.children!.push(node.id);
      nodes.push(node);
      parent = node;
    }
    samples.push(parent.id);
    timeDeltas.push(ms * 1000);
  }
  return { nodes, samples, timeDeltas };
}

const DIST = 'file:///work/vidfeeds/dist';

describe('the profile of a build, by stage', () => {
  it("files each sample under the innermost frame's stage, the hash of a document under the state", () => {
    const build = ['buildUsers', `${DIST}/pipeline/run-build.js`] as [string, string];
    const totals = stagesOf([
      profileOf([
        { frames: [build, ['userBundle', `${DIST}/db/site-reader.js`]], ms: 5 },
        { frames: [build, ['render', `${DIST}/formats/rss.js`], ['serialize', `${DIST}/render/xml.js`]], ms: 4 },
        { frames: [build, ['write', `${DIST}/pipeline/threads/write-pool.js`]], ms: 3 },
        { frames: [['place', `${DIST}/pipeline/write/output-writer.js`]], ms: 2 },
        { frames: [build, ['record', `${DIST}/pipeline/build-state.js`]], ms: 1 },
        { frames: [build, ['compareAndWrite', `${DIST}/pipeline/write/write-documents.js`], ['documentHash', `${DIST}/render/document-hash.js`], ['wasm-function[5]', 'wasm://wasm/e454c672']], ms: 6 },
        { frames: [['(garbage collector)', '']], ms: 7 },
        { frames: [build], ms: 8 },
      ]),
    ]);
    expect(Object.fromEntries(totals)).toEqual({ reading: 5, rendering: 4, 'hand-off': 3, writing: 2, state: 7, gc: 7, idle: 0, other: 8 });
  });
});
