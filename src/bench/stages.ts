import { readFileSync } from 'node:fs';

/**
 * `node dist/bench/stages.js <file.cpuprofile>...`: where a build's CPU time went, by stage. Reads
 * profiles written by `node --cpu-prof` (one per thread) and files every sample under the stage of
 * the innermost frame on its stack that names one: reading (the site reader, SQLite), rendering
 * (the formats and their XML, JSON and HTML writers), hand-off (to the write thread or the render
 * threads), writing (file system calls), the state (the build state's SQLite and the hash of each
 * document), garbage collection; the rest is "other" (start-up, module loading, the build loop).
 * Figures and what they led to: docs/performance.md, "Where the time goes".
 */

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export const STAGES = ['reading', 'rendering', 'hand-off', 'writing', 'state', 'gc', 'idle', 'other'] as const;
export type Stage = (typeof STAGES)[number];

/** The stage a frame names, if any: by module first, then by function for native frames. */
function stageOfFrame({ functionName, url }: ProfileNode['callFrame']): Stage | null {
  if (functionName === '(garbage collector)') return 'gc';
  if (functionName === '(idle)' || functionName === '(program)') return 'idle';
  if (/\/db\/site-reader\.js$|better-sqlite3/.test(url)) return 'reading';
  if (/\/(?:src|dist)\/(formats|render)\/[^/]+\.js$|handlebars|xmlbuilder2/.test(url)) return 'rendering';
  if (/\/pipeline\/threads\/write-pool\.js$/.test(url)) return 'hand-off';
  if (/\/pipeline\/(write\/output-writer|threads\/write-worker)\.js$/.test(url)) return 'writing';
  if (/\/pipeline\/build-state\.js$/.test(url)) return 'state';
  return null;
}

/** A frame of the hash of a document (src/render/document-hash.ts; the wasm below it is its callee). */
function isDocumentHash({ url }: ProfileNode['callFrame']): boolean {
  return /\/render\/document-hash\.js$/.test(url);
}

/** Milliseconds per stage over the profiles given. */
export function stagesOf(profiles: Profile[]): Map<Stage, number> {
  const totals = new Map<Stage, number>(STAGES.map((stage) => [stage, 0]));
  for (const profile of profiles) {
    const parent = new Map<number, number>();
    const byId = new Map<number, ProfileNode>();
    for (const node of profile.nodes) {
      byId.set(node.id, node);
      for (const child of node.children ?? []) parent.set(child, node.id);
    }
    // The stage of a node: its own, else its caller's; the hash of each document is filed under
    // the state, whose comparison it serves.
    const stageOf = new Map<number, Stage>();
    const resolve = (id: number): Stage => {
      const known = stageOf.get(id);
      if (known !== undefined) return known;
      const node = byId.get(id)!;
      const own = isDocumentHash(node.callFrame) ? 'state' : stageOfFrame(node.callFrame);
      const up = parent.get(id);
      const stage = own ?? (up === undefined ? 'other' : resolve(up));
      stageOf.set(id, stage);
      return stage;
    };
    profile.samples.forEach((id, i) => {
      const stage = resolve(id);
      totals.set(stage, totals.get(stage)! + (profile.timeDeltas[i] ?? 0) / 1000);
    });
  }
  return totals;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: stages.js <file.cpuprofile>... (one per thread, from node --cpu-prof)');
    process.exitCode = 2;
  } else {
    for (const file of files) {
      const totals = stagesOf([JSON.parse(readFileSync(file, 'utf8')) as Profile]);
      const busy = [...totals].filter(([stage]) => stage !== 'idle').reduce((sum, [, ms]) => sum + ms, 0);
      console.log(`${file}: ${(busy / 1000).toFixed(2)} s busy`);
      for (const [stage, ms] of totals) {
        if (stage === 'idle') console.log(`  ${stage.padEnd(10)} ${(ms / 1000).toFixed(2).padStart(7)} s`);
        else console.log(`  ${stage.padEnd(10)} ${(ms / 1000).toFixed(2).padStart(7)} s  ${((100 * ms) / busy).toFixed(1).padStart(5)}%`);
      }
    }
  }
}
