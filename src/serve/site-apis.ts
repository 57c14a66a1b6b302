import type Database from 'better-sqlite3';
import type { SiteReader } from '../db/site-reader.js';
import type { SiteContext } from '../model/site-context.js';
import type { VideoView } from '../model/views.js';
import { XmlDocument } from '../render/xml.js';
import { webUrl } from '../render/urls.js';

/**
 * The APIs `vidfeeds serve` calls that other modules own: the oEmbed renderer
 * (src/formats/oembed.ts), the video look-up by public id (SiteReader) and the recommendation
 * validation and storage (src/db/recommendations.ts). Kept behind this one module so the server
 * code does not care where they live.
 *
 * INTERIM: until those modules land on main, minimal stand-ins below keep serve working; each is
 * replaced by a re-export of the real one when it lands.
 */

export interface OembedResponse {
  version: '1.0';
  type: 'video';
  title: string;
  author_name: string;
  author_url: string;
  provider_name: string;
  provider_url: string;
  width: number;
  height: number;
  html: string;
  thumbnail_url: string;
  thumbnail_width: number;
  thumbnail_height: number;
}

export function oembedResponse(video: VideoView, site: SiteContext, options: { maxwidth?: number; maxheight?: number } = {}): OembedResponse {
  let width = site.config.player.width;
  let height = site.config.player.height;
  const scale = Math.min(1, (options.maxwidth ?? width) / width, (options.maxheight ?? height) / height);
  width = Math.max(1, Math.floor(width * scale));
  height = Math.max(1, Math.floor(height * scale));
  return {
    version: '1.0',
    type: 'video',
    title: video.title,
    author_name: video.uploader.username,
    author_url: site.paths.userPage(video.uploader.username),
    provider_name: site.config.siteName,
    provider_url: `${site.paths.base}/`,
    width,
    height,
    html: site.embed.render(video, { width, height }),
    thumbnail_url: video.thumbnailUrl,
    thumbnail_width: video.thumbnailWidth,
    thumbnail_height: video.thumbnailHeight,
  };
}

export function oembedJson(r: OembedResponse): string {
  return JSON.stringify(r);
}

export function oembedXml(r: OembedResponse): string {
  const doc = new XmlDocument('oembed');
  for (const [name, value] of Object.entries(r)) doc.root.leaf(name, value as string | number);
  return doc.end();
}

export type VideoLookup = { status: 'published'; video: VideoView } | { status: 'private' } | { status: 'missing' };

/** A video by public id: published, private (exists, not public: 401) or missing (404). */
export function videoByPublicId(reader: SiteReader, db: Database.Database, publicId: string): VideoLookup {
  for (const row of reader.videos()) {
    if (row.publicId !== publicId) continue;
    const video = reader.video(row.id);
    if (video !== null && !('problem' in video)) return { status: 'published', video };
  }
  const exists = db.prepare('SELECT 1 FROM videos WHERE public_id = ?').get(publicId);
  return exists === undefined ? { status: 'missing' } : { status: 'private' };
}

export interface NewRecommendation {
  title: string;
  image: string;
  link: string;
  description: string;
  durationSeconds: number | null;
}

type RecommendationInput = Partial<Record<'title' | 'image' | 'link' | 'description' | 'duration', string>>;

export function validateRecommendation(input: RecommendationInput): { ok: true; value: NewRecommendation } | { ok: false; field: string; message: string } {
  const title = (input.title ?? '').trim();
  if (title === '') return { ok: false, field: 'title', message: 'is required' };
  if (title.length > 500) return { ok: false, field: 'title', message: 'must be at most 500 characters' };
  for (const field of ['image', 'link'] as const) {
    const value = input[field] ?? '';
    if (value === '') return { ok: false, field, message: 'is required' };
    if (webUrl(value) === null) return { ok: false, field, message: 'must be an absolute http(s) URL' };
  }
  const description = input.description ?? '';
  if (description.length > 5000) return { ok: false, field: 'description', message: 'must be at most 5000 characters' };
  return { ok: true, value: { title, image: webUrl(input.image!)!, link: webUrl(input.link!)!, description, durationSeconds: null } };
}

export function storeRecommendation(db: Database.Database, username: string, value: NewRecommendation, now: Date): { status: 'stored'; id: number } | { status: 'unknown-user' } {
  const user = db.prepare<[string], { id: number }>(`SELECT id FROM users WHERE username = ? AND state = 'active'`).get(username);
  if (user === undefined) return { status: 'unknown-user' };
  const result = db
    .prepare('INSERT INTO recommendations (user_id, title, link, image, description, duration_seconds, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
    .run(user.id, value.title, value.link, value.image, value.description, value.durationSeconds, Math.floor(now.getTime() / 1000));
  return { status: 'stored', id: Number(result.lastInsertRowid) };
}
