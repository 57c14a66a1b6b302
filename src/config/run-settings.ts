import { dirname, resolve } from 'node:path';

/**
 * The settings of a configuration file that say how vidfeeds runs rather than what the documents
 * hold: where the database, the tree and the state are, how it logs, and how many removals a build
 * may make unasked. They are kept out of the site's settings (`SiteConfig`), so that changing one
 * never makes the next build a full one (the build fingerprints the site's settings), and each
 * command's flag wins over its setting.
 */
export interface RunSettings {
  /** Absolute (a relative path in a file is relative to that file); null: not set. */
  db: string | null;
  out: string | null;
  state: string | null;
  logLevel: 'error' | 'warn' | 'info' | 'debug';
  logFormat: 'text' | 'json';
  /** `vidfeeds serve` logs each request. */
  accessLog: boolean;
  /** The removal guard: the largest share (0 to 1) of the published documents a build removes unasked. */
  maxRemovalShare: number;
  /** Removals fewer than this never stop a build. */
  removalGuardMinimum: number;
  /** Where `vidfeeds deploy` publishes, and `vidfeeds watch` after each build (their flags win); `to` null: watch does not deploy. */
  deploy: { to: string | null; endpoint: string | null };
}

export const RUN_SETTING_KEYS = ['db', 'out', 'state', 'logLevel', 'logFormat', 'accessLog', 'maxRemovalShare', 'removalGuardMinimum', 'deploy'] as const satisfies ReadonlyArray<keyof RunSettings>;

const PATH_KEYS = ['db', 'out', 'state'] as const;

/**
 * Takes the run settings out of validated settings (which keeps the site's alone), with the paths
 * a configuration file gave made absolute from that file's folder: a cron job's or a unit's
 * working directory is rarely the site's.
 */
export function takeRunSettings(settings: Record<string, unknown>, file: string | null): RunSettings {
  const run: Record<string, unknown> = {};
  for (const key of RUN_SETTING_KEYS) {
    run[key] = settings[key];
    delete settings[key];
  }
  for (const key of PATH_KEYS) {
    if (typeof run[key] === 'string' && file !== null) run[key] = resolve(dirname(file), run[key] as string);
  }
  return run as unknown as RunSettings;
}
