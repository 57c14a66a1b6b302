import { DEMO_SHAPES, type DemoShape } from '../db/demo-data.js';
import type { BenchStoreKind } from './deploy-bench.js';
import type { WriterMix } from './writer.js';
import { FORMATS } from '../formats/registry.js';

/** The bench's command line (bench.ts lists the options). */

export interface BenchOptions {
  users: number[];
  shapes: DemoShape[];
  /** Formats to build (`--only`); every format when absent. */
  only?: string[];
  keep: boolean;
  /** Full builds timed against their floor, each pair right after the one before (`--pairs`). */
  pairs: number;
  /** The deploy run instead of the build timings (deploy-bench.ts). */
  deploy: boolean;
  /** The store the deploy run deploys to (`--store`). */
  store: BenchStoreKind;
  /** The freshness run instead of the build timings, with its writer's rate and length, and how often it syncs from a site database of its own (null: it writes to vidfeeds's). */
  freshness: { rate: number; seconds: number; syncEvery: number | null; mix: WriterMix } | null;
  /** Environment of every build. */
  env: Record<string, string>;
}

export function parseArgs(argv: string[]): BenchOptions {
  let users = [10_000, 100_000];
  let shapes: DemoShape[] = [...DEMO_SHAPES];
  let only: string[] | undefined;
  let keep = false;
  let pairs = 1;
  let freshness: BenchOptions['freshness'] = null;
  let deploy = false;
  let store: BenchStoreKind = 's3rver';
  let rate = 20;
  let seconds = 60;
  let syncEvery: number | null = null;
  let mix: WriterMix = 'mixed';
  const env: Record<string, string> = {};
  const positive = (flag: string, value: string | undefined) => {
    const number = Number(value);
    if (!Number.isFinite(number) || number <= 0) throw new Error(`${flag} takes a positive number`);
    return number;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--users') {
      users = (argv[++i] ?? '').split(',').map((n) => Number(n.replace(/_/g, '')));
      if (users.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--users takes a comma-separated list of user counts, e.g. 10000,100000');
    } else if (arg === '--shape') {
      const names = (argv[++i] ?? '').split(',');
      const unknown = names.filter((name) => !(DEMO_SHAPES as readonly string[]).includes(name));
      if (unknown.length > 0) throw new Error(`--shape takes a comma-separated list of ${DEMO_SHAPES.join(', ')}; not ${unknown.join(', ')}`);
      shapes = names as DemoShape[];
    } else if (arg === '--only') {
      only = (argv[++i] ?? '').split(',').filter(Boolean);
      const unknown = only.filter((name) => !FORMATS.some((format) => format.name === name));
      if (only.length === 0 || unknown.length > 0) throw new Error(`--only takes a comma-separated list of formats (${FORMATS.map((f) => f.name).join(', ')})`);
    } else if (arg === '--keep') {
      keep = true;
    } else if (arg === '--pairs') {
      pairs = Number(argv[++i]);
      if (!Number.isInteger(pairs) || pairs < 1 || pairs > 9) throw new Error('--pairs takes a whole number from 1 to 9');
    } else if (arg === '--freshness') {
      freshness = { rate, seconds, syncEvery, mix };
    } else if (arg === '--mix') {
      const given = argv[++i];
      if (given !== 'mixed' && given !== 'titles') throw new Error('--mix takes mixed or titles');
      mix = given;
    } else if (arg === '--sync-every') {
      syncEvery = positive(arg, argv[++i]);
    } else if (arg === '--deploy') {
      deploy = true;
    } else if (arg === '--store') {
      const given = argv[++i];
      if (given !== 's3rver' && given !== 'radosgw') throw new Error('--store takes s3rver or radosgw');
      store = given;
    } else if (arg === '--rate') {
      rate = positive(arg, argv[++i]);
    } else if (arg === '--seconds') {
      seconds = positive(arg, argv[++i]);
    } else if (arg === '--xml') {
      const engine = argv[++i];
      if (engine !== 'fast' && engine !== 'builder') throw new Error('--xml takes fast or builder');
      env.VIDFEEDS_XML_ENGINE = engine;
    } else {
      throw new Error(`unknown option ${arg}; options: --users <n,...>, --shape demo,feed-heavy, --only <formats>, --keep, --pairs <n>, --xml fast|builder, --freshness [--rate <n>] [--seconds <n>] [--mix mixed|titles] [--sync-every <s>], --deploy [--store s3rver|radosgw]`);
    }
  }
  if (syncEvery !== null && freshness === null) throw new Error('--sync-every goes with --freshness');
  if (argv.includes('--store') && !deploy) throw new Error('--store goes with --deploy');
  if (freshness !== null) freshness = { rate, seconds, syncEvery, mix };
  // The deploy run's size unless --users says otherwise: the store writes each object as files.
  if (deploy && !argv.includes('--users')) users = [10_000];
  return { users, shapes, only, keep, pairs, freshness, deploy, store, env };
}

