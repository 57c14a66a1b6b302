import type Database from 'better-sqlite3';
import type { SiteReader, VideoLookup } from '../db/site-reader.js';
import { webUrl } from '../render/urls.js';

/**
 * The APIs `vidfeeds serve` calls that other modules own: the oEmbed renderer
 * (src/formats/oembed.ts), the video look-up by public id (SiteReader) and the recommendation
 * validation and storage (src/db/recommendations.ts), in one module, so the server code does not
 * care where they live.
 *
 * INTERIM: until src/db/recommendations.ts (issue 3) lands on main, the two recommendation
 * functions below stand in for it; they are then replaced by
 * `export { storeRecommendation, validateRecommendation, type NewRecommendation } from '../db/recommendations.js';`
 */
export { oembedJson, oembedResponse, oembedXml, type OembedResponse } from '../formats/oembed.js';

/** A video by public id: published, private (401) or missing (404). */
export function videoByPublicId(reader: SiteReader, publicId: string): VideoLookup {
  return reader.videoByPublicId(publicId);
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
