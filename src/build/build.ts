import { createHash } from 'node:crypto';
import type { SiteReader } from '../db/site-reader.js';
import type { Format, SiteFormat, UserFormat, VideoFormat } from '../formats/format.js';
import type { SiteContext } from '../model/site-context.js';
import type { SiteIndex, UserPart } from '../model/views.js';
import { showName } from '../paths/names.js';
import type { BuildState } from './build-state.js';
import type { OutputWriter } from './output-writer.js';

/**
 * The build: read (one snapshot of the database) → view models → render → write → prune.
 * It knows nothing of the command line, the terminal or where files go: the writer, the state
 * and the reporter are handed in, so tests run it in memory.
 */

export interface BuildOptions {
  /** Format names to build; all when absent. */
  only?: ReadonlySet<string>;
  /** Build only this user's documents (and their videos'); site-wide files are left alone. */
  user?: string;
  /** An unpublishable row stops the build instead of being skipped. */
  strict?: boolean;
}

export interface Skipped {
  kind: 'user' | 'video';
  key: string;
  reason: string;
  /** The reason is about the name (it cannot be a path), not the row's other data. */
  isName: boolean;
}

export interface Failure {
  format: string;
  key: string;
  path: string;
  message: string;
}

export interface BuildReport {
  written: number;
  unchanged: number;
  removed: number;
  skipped: Skipped[];
  failed: Failure[];
  documents: number;
  bytesWritten: number;
  seconds: number;
}

export interface BuildReporter {
  /** Called now and then with the number of documents done. */
  progress?(done: number): void;
  /** A row that was skipped or a document that failed, as it happens. */
  warn?(message: string): void;
}

export interface BuildDeps {
  reader: SiteReader;
  writer: OutputWriter;
  state: BuildState;
  site: SiteContext;
  formats: readonly Format[];
  reporter?: BuildReporter;
}

/** An unpublishable row under --strict. Exit code 1. */
export class StrictModeError extends Error {
  constructor(readonly skipped: Skipped) {
    super(`${skipped.kind} ${showName(skipped.key)} cannot be published: ${describeSkip(skipped)} (--strict makes this fatal)`);
    this.name = 'StrictModeError';
  }
}

export function describeSkip(skipped: Skipped): string {
  return skipped.isName ? `its name ${skipped.reason}` : `it ${skipped.reason}`;
}

export function selectFormats(all: readonly Format[], only: ReadonlySet<string> | undefined): Format[] {
  if (only === undefined) return [...all];
  return all.filter((f) => only.has(f.name));
}

export function runBuild(deps: BuildDeps, options: BuildOptions = {}): BuildReport {
  const started = process.hrtime.bigint();
  const { reader, writer, state, site, reporter } = deps;
  const formats = selectFormats(deps.formats, options.only);
  const userFormats = formats.filter((f): f is UserFormat => f.scope === 'user');
  const videoFormats = formats.filter((f): f is VideoFormat => f.scope === 'video');
  const siteFormats = options.user === undefined ? formats.filter((f): f is SiteFormat => f.scope === 'site') : [];
  const parts = new Set<UserPart>(userFormats.flatMap((f) => f.needs));

  const report: BuildReport = {
    written: 0,
    unchanged: 0,
    removed: 0,
    skipped: [],
    failed: [],
    documents: 0,
    bytesWritten: 0,
    seconds: 0,
  };
  let lastProgress = 0;

  const emit = (format: Format, path: string, key: string, user: string | null, render: () => string) => {
    let body: Buffer;
    try {
      body = Buffer.from(render(), 'utf8');
    } catch (error) {
      const failure = { format: format.name, key, path, message: (error as Error).message };
      report.failed.push(failure);
      reporter?.warn?.(`failed: ${format.name} of ${showName(key)} (${path}): ${failure.message}`);
      state.keep(path);
      return;
    }
    const hash = createHash('sha1').update(body).digest();
    const previous = state.previous(path);
    if (previous !== undefined && previous.size === body.length && previous.hash.equals(hash) && writer.size(path) === body.length) {
      report.unchanged++;
    } else {
      writer.write(path, body);
      report.written++;
      report.bytesWritten += body.length;
    }
    state.record(path, format.name, user, hash, body.length);
    report.documents++;
    if (reporter?.progress && report.documents - lastProgress >= 500) {
      lastProgress = report.documents;
      reporter.progress(report.documents);
    }
  };

  const skip = (skipped: Skipped) => {
    if (options.strict) throw new StrictModeError(skipped);
    report.skipped.push(skipped);
    reporter?.warn?.(`skipped ${skipped.kind} ${showName(skipped.key)}: ${describeSkip(skipped)}`);
  };

  state.begin();
  try {
    reader.snapshot(() => {
      for (const format of siteFormats) {
        const index = siteIndex(reader, site);
        let files;
        try {
          files = format.render(index, site);
        } catch (error) {
          report.failed.push({ format: format.name, key: '', path: format.file, message: (error as Error).message });
          reporter?.warn?.(`failed: ${format.name} (${format.file}): ${(error as Error).message}`);
          continue;
        }
        for (const file of files) emit(format, file.file, '', null, () => file.body);
      }

      if (userFormats.length > 0) {
        for (const row of reader.users(options.user)) {
          const problem = site.paths.problem(row.username);
          if (problem !== null) {
            skip({ kind: 'user', key: row.username, reason: problem, isName: true });
            continue;
          }
          const bundle = reader.userBundle(row.id, parts);
          for (const format of userFormats) {
            emit(format, site.paths.file(format, row.username), row.username, row.username, () => format.render(bundle, site));
          }
        }
      }

      if (videoFormats.length > 0) {
        for (const row of reader.videos(options.user)) {
          const problem = site.paths.problem(row.publicId);
          if (problem !== null) {
            skip({ kind: 'video', key: row.publicId, reason: problem, isName: true });
            continue;
          }
          const video = reader.video(row.id);
          if (video === null) continue;
          if ('problem' in video) {
            skip({ kind: 'video', key: row.publicId, reason: video.problem, isName: false });
            continue;
          }
          for (const format of videoFormats) {
            emit(format, site.paths.file(format, row.publicId), row.publicId, video.uploader.username, () => format.render({ video }, site));
          }
        }
      }
    });

    // Prune: what an earlier build wrote, in this build's scope, that this build did not produce.
    const scope = { formats: new Set(formats.map((f) => f.name)), user: options.user };
    for (const path of [...state.stale(scope)]) {
      if (writer.remove(path)) report.removed++;
      state.forget(path);
    }
    state.commit();
  } catch (error) {
    state.rollback();
    throw error;
  }
  report.seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return report;
}

/** Published keys for site-wide documents: only names that can be paths (the rest are reported elsewhere). */
function siteIndex(reader: SiteReader, site: SiteContext): SiteIndex {
  return {
    *usernames() {
      for (const row of reader.users()) if (site.paths.problem(row.username) === null) yield row.username;
    },
    *videoIds() {
      for (const id of reader.publishableVideoIds()) if (site.paths.problem(id) === null) yield id;
    },
  };
}
