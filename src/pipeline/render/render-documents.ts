import { planArchivePages } from '../../formats/archive-places.js';
import type { AnyUserFormat, ArchiveFormat, Format, SiteContext, SiteFile, SiteFormat, VideoFormat } from '../../formats/format.js';
import type { GroupView, VideoView } from '../../model/views.js';
import type { SiteIndex } from '../../model/views.js';
import { showName } from '../../paths/names.js';
import type { Owner } from '../build-state.js';
import type { Failure } from '../build-report.js';
import type { OwnerRead } from '../read/read-owners.js';

/**
 * The render stage: an owner's documents, as text, from what the read stage gave. Pure: it
 * touches no disk, database or clock (the formats' renderers do not either), so the same read
 * gives the same text. A renderer that throws gives a failure naming the document instead.
 */

export interface RenderedDocument {
  format: Format;
  /** The file under out/. */
  path: string;
  /** The username or video id ('' for a site-wide document). */
  key: string;
  owner: Owner;
  /** The user the document belongs to (a video's uploader), for `--user` builds; null for site files. */
  user: string | null;
  /** What the format rendered; the write stage encodes it as UTF-8 (document-bytes.ts). */
  text: string;
}

export interface FailedDocument {
  format: Format;
  path: string;
  key: string;
  owner: Owner;
  failure: Failure;
  /** Names the document in a warning. */
  where: string;
}

export type RenderResult = { ok: true; document: RenderedDocument } | { ok: false; failed: FailedDocument };

function renderOne(format: Format, path: string, key: string, owner: Owner, user: string | null, render: () => string): RenderResult {
  try {
    return { ok: true, document: { format, path, key, owner, user, text: render() } };
  } catch (error) {
    const failure = { format: format.name, key, path, message: (error as Error).message };
    return { ok: false, failed: { format, path, key, owner, failure, where: `${format.name} of ${showName(key)} (${path})` } };
  }
}

/** Every document of one user or video, in the order of `formats`; an archive's pages one at a time. */
export function* renderOwner(
  read: Exclude<OwnerRead, { kind: 'skipped' }>,
  formats: { user: readonly AnyUserFormat[]; video: readonly VideoFormat[] },
  site: SiteContext,
): Generator<RenderResult> {
  if (read.kind === 'user') {
    for (const format of formats.user) {
      if (format.paged !== undefined) yield* renderArchive(format, read, site);
      else yield renderOne(format, site.paths.file(format, read.key), read.key, read.owner, read.key, () => format.render(read.bundle, site));
    }
    return;
  }
  const view = { video: read.video };
  for (const format of formats.video) {
    yield renderOne(format, site.paths.file(format, read.key), read.key, read.owner, read.video.uploader.username, () => format.render(view, site));
  }
}

/**
 * The pages of a user's archive, each read and rendered in turn, so one page of the user's
 * history is in memory at a time. A page that cannot be rendered gives a failure naming it (its
 * old file and record are kept); once the list cannot be read, every page after gives one too.
 */
function* renderArchive(format: ArchiveFormat, read: Extract<OwnerRead, { kind: 'user' }>, site: SiteContext): Generator<RenderResult> {
  const uploads = format.list === 'uploads';
  const plan = planArchivePages(uploads ? read.bundle.archived.uploads : read.bundle.archived.groups);
  if (plan.length === 0) return;
  const sizes = plan.map((p) => p.rows);
  let pages: Iterator<VideoView[] | GroupView[]> | null = null;
  let unread: Error | null = null;
  const nextRows = (): VideoView[] | GroupView[] => {
    if (unread !== null) throw new Error(`the archive could not be read: ${unread.message}`);
    try {
      pages ??= (uploads ? read.archive.uploads(sizes) : read.archive.groups(sizes))[Symbol.iterator]();
      const next = pages.next();
      if (next.done === true) throw new Error('the archive holds fewer rows than its plan');
      return next.value;
    } catch (error) {
      unread = error as Error;
      throw error;
    }
  };
  for (const [i, { number }] of plan.entries()) {
    yield renderOne(format, site.paths.file(format, read.key, number), read.key, read.owner, read.key, () => {
      const items = nextRows();
      const page = {
        number,
        prev: plan[i - 1]?.number ?? null,
        next: plan[i + 1]?.number ?? null,
        uploads: uploads ? (items as VideoView[]) : [],
        groups: uploads ? [] : (items as GroupView[]),
      };
      return format.renderPage(read.bundle, page, site);
    });
  }
}

/** A site file the format keeps as an earlier build wrote it (a sitemap part whose owners did not change). */
export interface KeptFile {
  kept: string;
}

/**
 * The files of one site-wide format (the sitemap writes several), one at a time as the format
 * yields them, so a large sitemap is never whole in memory. A format that cannot start, or stops
 * half-way, gives one failure for its file.
 */
export function* renderSiteFormat(format: SiteFormat, index: SiteIndex, site: SiteContext): Generator<RenderResult | KeptFile> {
  const failed = (error: unknown): RenderResult => {
    const failure = { format: format.name, key: '', path: format.file, message: (error as Error).message };
    return { ok: false, failed: { format, path: format.file, key: '', owner: { kind: 'site' }, failure, where: `${format.name} (${format.file})` } };
  };
  let files: Iterator<SiteFile>;
  try {
    files = format.render(index, site)[Symbol.iterator]();
  } catch (error) {
    yield failed(error);
    return;
  }
  for (;;) {
    let next: IteratorResult<SiteFile>;
    try {
      next = files.next();
    } catch (error) {
      // The files yielded so far stand; the format's own file (the index) keeps its old bytes.
      yield failed(error);
      return;
    }
    if (next.done === true) return;
    const file = next.value;
    if ('unchanged' in file) yield { kept: file.file };
    else yield renderOne(format, file.file, '', { kind: 'site' }, null, () => file.body);
  }
}
