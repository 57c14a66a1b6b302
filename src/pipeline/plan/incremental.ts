import type { SiteConfig } from '../../config/site-config.js';
import fg from 'fast-glob';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChangeLogPosition } from '../../db/change-log.js';
import type { Format } from '../../formats/format.js';
import { SHIPPED_TEMPLATES_DIR } from '../../render/templates.js';
import { STATE_VERSION, type BuildBasis } from '../build-state.js';

/**
 * When a build may be incremental, and from where. A build follows from the basis of the last
 * complete build (src/pipeline/build-state.ts) only when everything that shapes the bytes besides
 * the data is the same: vidfeeds (its version and its code), configuration, format table,
 * templates and database.
 * Otherwise it is a full build, and the report says why. `planBuild` is pure.
 */

/** What shapes the documents besides the data. */
export interface BuildFingerprint {
  vidfeedsVersion: string;
  /** Hash of the code that runs: a build from changed sources with the same version is another vidfeeds. */
  codeHash: string;
  configHash: string;
  formatsHash: string;
  templatesHash: string;
}

export type BuildMode = 'full' | 'incremental' | 'partial';

export interface BuildPlan {
  mode: BuildMode;
  /** Why this mode, in words for the summary. */
  reason: string;
  /** Compare with the bytes on disk rather than the saved hashes (after an interrupted build). */
  verify: boolean;
  /** For an incremental build: the changes after this position (up to the log's current one) apply. */
  from?: number;
}

export interface PlanInput {
  state: {
    basis: BuildBasis | null;
    basisDropped: string | null;
    interrupted: boolean;
    replacedVersion: number | null;
    empty: boolean;
    /**
     * The output directory holds no documents (OutputWriter.isEmpty): with records in the state,
     * it was emptied or replaced since (`rm -rf out`), and following the log would write nothing.
     */
    outputEmpty: boolean;
    /** The tree may hold files no record names (BuildState.needsSweep): a full build sweeps it. */
    sweep?: boolean;
  };
  /** The identity of the change log entry at a position (ChangeLog.identityAt). */
  logIdentityAt?: (seq: number) => string | null;
  fingerprint: BuildFingerprint | undefined;
  /** The database's change log now; undefined when the build runs without one (tests in memory). */
  log: ChangeLogPosition | undefined;
  options: { full?: boolean; only?: ReadonlySet<string>; user?: string };
}

export function planBuild({ state, fingerprint, log, options, logIdentityAt }: PlanInput): BuildPlan {
  const verify = state.interrupted || state.sweep === true;
  if (options.only !== undefined || options.user !== undefined) {
    const what = [options.only && `--only ${[...options.only].join(',')}`, options.user !== undefined && `--user ${options.user}`].filter(Boolean);
    return { mode: 'partial', reason: `${what.join(' ')}; the change log position is kept for the next build`, verify };
  }
  const full = (reason: string): BuildPlan => ({ mode: 'full', reason, verify });
  const views = log?.views ?? [];
  if (views.length > 0) {
    const reason = `${views.join(', ')} ${views.length === 1 ? 'is a view' : 'are views'} in place of vidfeeds's tables: changes to their rows reach no change log, so every build renders everything; fill real tables with \`vidfeeds sync\` (docs/adopting.md)`;
    return { mode: 'full', reason, verify: verify || options.full === true };
  }
  // An asked-for full build is also the repair: every file is read back and compared with its
  // render, so a file changed or lost on disk is rewritten even where the record still matches.
  if (options.full) return { mode: 'full', reason: '--full: every file is compared with its bytes on disk', verify: true };
  if (state.interrupted) return full('the last build did not finish: every file is checked against its bytes on disk');
  if (state.sweep === true) {
    return full(state.basisDropped ?? 'an earlier build did not finish: every file is checked against its bytes on disk, and files no row produces are removed');
  }
  if (state.replacedVersion !== null) {
    return full(`the saved state is of version ${state.replacedVersion} (this vidfeeds keeps version ${STATE_VERSION})`);
  }
  if (state.outputEmpty && !state.empty) return full('the output directory holds no documents (emptied since the last build)');
  const basis = state.basis;
  if (basis === null) return full(state.basisDropped ?? (state.empty ? 'first build: no saved state' : 'no complete earlier build'));
  if (fingerprint === undefined || log === undefined) return full('no change log to follow');
  if (basis.vidfeedsVersion !== fingerprint.vidfeedsVersion) {
    return full(`vidfeeds changed from ${basis.vidfeedsVersion} to ${fingerprint.vidfeedsVersion}`);
  }
  if (basis.codeHash !== fingerprint.codeHash) return full(`the code of vidfeeds ${fingerprint.vidfeedsVersion} changed`);
  if (basis.configHash !== fingerprint.configHash) return full('the configuration changed');
  if (basis.formatsHash !== fingerprint.formatsHash) return full('the format table changed');
  if (basis.templatesHash !== fingerprint.templatesHash) return full('a template changed');
  if (basis.databaseId !== log.databaseId) return full('the database is another one (its database_id differs)');
  if (log.position < basis.position) {
    return full(`the change log ends at ${log.position}, before the saved position ${basis.position} (was the database restored or replaced?)`);
  }
  if (log.position > basis.position && (log.oldest === null || log.oldest > basis.position + 1)) {
    return full(`the change log was pruned past the saved position ${basis.position}`);
  }
  const seen = basis.positionIdentity;
  const now = seen === undefined || seen === null ? null : (logIdentityAt?.(basis.position) ?? null);
  if (now !== null && now !== seen) {
    return full(`the change log entry at the saved position ${basis.position} is not the one the last build saw (was the database restored from a backup and written to since?)`);
  }
  return { mode: 'incremental', reason: `the saved state matches; changes after position ${basis.position}`, verify: false, from: basis.position };
}

/** The basis a complete build leaves for the next one. */
export function basisOf(fingerprint: BuildFingerprint, log: ChangeLogPosition): BuildBasis {
  return { ...fingerprint, databaseId: log.databaseId, position: log.position, positionIdentity: log.identity ?? null };
}

/** Template directories a build reads: the site's own first, then the shipped ones. */
export function templateDirs(config: SiteConfig): string[] {
  return [...(config.player.templatesDir === null ? [] : [resolve(config.player.templatesDir)]), SHIPPED_TEMPLATES_DIR];
}

export function buildFingerprint(config: SiteConfig, formats: readonly Format[], vidfeedsVersion: string): BuildFingerprint {
  // `strict` decides only whether a bad row stops the build, `cacheControl` only what the host
  // configurations say, `maxLockAgeSeconds` only when a lock is reported, and where and when
  // changes are announced only who hears of them: never a byte of a document (the IndexNow key is
  // the key file's bytes, and stays).
  const { strict: _strict, cacheControl: _cacheControl, maxLockAgeSeconds: _maxLockAge, notifyAfter: _notifyAfter, sync: _sync, indexNow, websub, ...rest } = config;
  const shaping = { ...rest, hubs: websub.hubs, indexNowKey: indexNow.key };
  return {
    vidfeedsVersion,
    codeHash: codeHash(),
    configHash: sha256(stableJson(shaping)),
    formatsHash: sha256(JSON.stringify(formats, (_key, value: unknown) => (value instanceof RegExp ? value.toString() : value))),
    templatesHash: templatesHash(templateDirs(config)),
  };
}

/** The folder of vidfeeds's modules: dist/ when installed, src/ when run from the sources (tests). */
const CODE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
let code: string | undefined;

/**
 * Hash of every module of vidfeeds (names and bytes), computed once per process. Where it is
 * installed is no part of it: the same code in another folder (a new Node version's global
 * modules, another release directory) renders the same bytes, and must not force a full build.
 */
export function codeHash(): string {
  code ??= filesHash([CODE_DIR], '**/*.{js,ts}');
  return code;
}

/**
 * Hash of every template under the template directories (names and bytes, each folder by its place
 * in the list), so any edit is seen. Only `.hbs` files are templates (src/render/templates.ts): an
 * editor's temporary, swap or backup file beside one (`embed.hbs.tmp` before an atomic save's
 * rename, `embed.hbs~`) changes no document, and must not make `watch` rebuild the whole site.
 */
export function templatesHash(dirs: readonly string[]): string {
  return filesHash(dirs, '**/*.hbs');
}

function filesHash(dirs: readonly string[], pattern: string): string {
  const hash = createHash('sha256');
  for (const [place, dir] of dirs.entries()) {
    hash.update(`dir\0${place}\0`);
    if (!existsSync(dir)) continue;
    for (const file of fg.sync(pattern, { cwd: dir, onlyFiles: true, dot: false }).sort()) {
      hash.update(`file\0${file}\0`).update(readFileSync(resolve(dir, file))).update('\0');
    }
  }
  return hash.digest('hex');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** JSON with object keys sorted, so equal values hash equally whatever their key order. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
