import type { PersonRef, VideoView } from '../model/views.js';
import { webUrl } from '../render/urls.js';
import { byCodePoint } from './by-code-point.js';
import { decoder, TAGS_KEPT, validName, type DecodeContext } from './decode-context.js';
import type { ValueIssue } from './decode.js';
import { OWN_VIDEO_COLUMN_COUNT, type RawOwnVideo, type RawPerson, type RawVideo } from './reader-columns.js';
import { keyProblemOf } from './publishable-key.js';
import { person } from './user-view.js';

/**
 * A video row decoded into the view the documents see, or the reason it cannot be published: the
 * columns a published video must hold (its id, title, file and thumbnail), its category and tags
 * by name, and its uploader.
 */

/** Why a public video cannot be published; `issue` when a value of the wrong type decided it. */
export interface VideoProblem {
  problem: string;
  issue?: ValueIssue;
}

/** Why a public video cannot be published, from the columns whose rule is `row`; or null. */
export function videoProblem(ctx: DecodeContext, row: readonly unknown[]): VideoProblem | null {
  const checked = checkVideo(ctx, row);
  return 'problem' in checked ? checked : null;
}

/**
 * Why a public video cannot be published (see `videoProblem`), or its file and thumbnail URLs as
 * published and its creation time: decoded once, since parsing URLs was a tenth of reading a
 * feed-heavy user.
 */
function checkVideo(
  ctx: DecodeContext,
  [id, publicId, title, fileUrl, thumbnailUrl, thumbnailWidth, thumbnailHeight, createdAt]: readonly unknown[],
  d = decoder(ctx, 'videos', id as number),
): VideoProblem | { fileUrl: string; thumbnailUrl: string; createdAt: Date } {
  d.text('public_id', publicId);
  d.text('title', title);
  const file = d.text('file_url', fileUrl);
  const thumbnail = d.text('thumbnail_url', thumbnailUrl);
  d.integer('thumbnail_width', thumbnailWidth);
  d.integer('thumbnail_height', thumbnailHeight);
  const created = d.time('created_at', createdAt);
  const issue = d.rejected;
  if (issue !== null) return { problem: `has ${issue.found} in ${issue.column} (expected ${issue.expected})`, issue };
  // Its id is a folder of the tree: a video the build skips for it is in no other document either.
  const name = keyProblemOf(publicId);
  if (name !== null) return { problem: `has a public_id that cannot be a path: it ${name}` };
  const published = { fileUrl: webUrl(file), thumbnailUrl: webUrl(thumbnail) };
  if (published.fileUrl === null) return { problem: 'has a file_url that is not an absolute http(s) URL' };
  if (published.thumbnailUrl === null) return { problem: 'has a thumbnail_url that is not an absolute http(s) URL' };
  // A time that passed its check: a row without one was rejected above.
  return { fileUrl: published.fileUrl, thumbnailUrl: published.thumbnailUrl, createdAt: created! };
}

/**
 * The name of a video's category, as joining `categories` on `category_id` gave it, without a
 * subquery on every video row: categories are few, and their names are kept per snapshot. A
 * `category_id` that is not a safe integer (text, a real, a BLOB; the type checks report it)
 * names no category: SQL would match none either, but for an integer beyond 2^53, which no
 * JavaScript number holds exactly.
 */
function categoryName(ctx: DecodeContext, categoryId: unknown): string | null {
  if (typeof categoryId !== 'number' || !Number.isSafeInteger(categoryId)) return null;
  const name = ctx.categoryById(categoryId);
  return name !== null && validName(name) ? name : null;
}

/**
 * The names of a video's tags, in SQLite's order of text (its BINARY collation: the bytes of
 * UTF-8, which is the order of code points), ties by id. Reading ids in SQL and names from a
 * per-snapshot map costs a fraction of joining, sorting and aggregating the names for every row
 * (docs/performance.md, "Figures behind the code").
 */
function tagNames(ctx: DecodeContext, ids: string | null): readonly string[] {
  if (ids === null) return NO_TAGS;
  const known = ctx.tagLists?.get(ids);
  if (known !== undefined) return known;
  const names = Object.freeze(namedTags(ctx, ids).filter(validName));
  if (ctx.tagLists !== null) {
    if (ctx.tagLists.size >= TAGS_KEPT) ctx.tagLists.clear();
    ctx.tagLists.set(ids, names);
  }
  return names;
}

const NO_TAGS: readonly string[] = Object.freeze([]);

function namedTags(ctx: DecodeContext, ids: string): string[] {
  const tags: Array<{ id: number; name: string }> = [];
  for (const text of ids.split(',')) {
    const id = Number(text);
    const name = ctx.tagName(id);
    if (name !== null) tags.push({ id, name });
  }
  if (tags.length > 1) tags.sort((a, b) => byCodePoint(a.name, b.name) || a.id - b.id);
  return tags.map((tag) => tag.name);
}

/** The view of a published video row, or why it cannot be published (see `videoProblem`). */
export function videoOrProblem(ctx: DecodeContext, raw: RawVideo): VideoView | VideoProblem {
  return ownVideoOrProblem(ctx, raw as unknown as RawOwnVideo, raw.slice(OWN_VIDEO_COLUMN_COUNT) as RawPerson);
}

/** As `videoOrProblem`, for a row without its uploader's columns, whose uploader is `uploader` (decoded, or its columns). */
export function ownVideoOrProblem(ctx: DecodeContext, raw: RawOwnVideo, uploader: RawPerson | PersonRef): VideoView | VideoProblem {
  const [
    id, publicId, title, description, durationSeconds, fileUrl, fileSize, fileType, width, height,
    thumbnailUrl, thumbnailWidth, thumbnailHeight, captionsUrl, categoryId, tagIds, createdAt, updatedAt,
  ] = raw;
  // One decoder for the row: the checked columns are decoded once (an issue is reported once either way).
  const d = decoder(ctx, 'videos', id);
  const checked = checkVideo(ctx, [id, publicId, title, fileUrl, thumbnailUrl, thumbnailWidth, thumbnailHeight, createdAt], d);
  if ('problem' in checked) return checked;
  const created = checked.createdAt;
  return {
    id,
    publicId: publicId as string,
    title: title as string,
    description: d.text('description', description) ?? '',
    durationSeconds: d.integer('duration_seconds', durationSeconds),
    fileUrl: checked.fileUrl,
    fileSize: d.integer('file_size', fileSize),
    fileType: d.mediaType('file_type', fileType) ?? 'application/octet-stream',
    width: d.integer('width', width),
    height: d.integer('height', height),
    thumbnailUrl: checked.thumbnailUrl,
    thumbnailWidth: thumbnailWidth as number,
    thumbnailHeight: thumbnailHeight as number,
    captionsUrl: webUrl(d.text('captions_url', captionsUrl)),
    category: categoryName(ctx, categoryId),
    tags: tagNames(ctx, tagIds),
    uploader: Array.isArray(uploader) ? person(ctx, uploader) : uploader,
    createdAt: created,
    updatedAt: d.time('updated_at', updatedAt) ?? created,
  };
}

export function publishable(result: VideoView | VideoProblem | null): VideoView | null {
  return result === null || 'problem' in result ? null : result;
}
