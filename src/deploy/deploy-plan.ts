import { compressedFormOf } from '../paths/compression.js';
import { matchRoute, type RouteMatch as PlaceMatch } from '../paths/url-scheme.js';
import { ownsKey, ownsSiteFiles, type ShardSpec } from '../shard/shard.js';
import type { Manifest, ManifestEntry } from '../hosting/manifest.js';
import { routeOfFile } from '../hosting/manifest.js';
import type { RouteMatch, Routes } from '../hosting/routes.js';

/**
 * What a deploy puts where, and in which order: every file of the tree's manifest
 * (src/hosting/manifest.ts) under each of its keys, its pre-compressed forms under the same keys
 * with `.gz`/`.br` appended, all below the target's prefix.
 *
 * The order is what keeps every reader of the store from finding a link to nothing:
 * 1. documents no key of which is in the store yet, a video's before a user's (a new video's
 *    documents, then a new user's, or the new URL of a feed's newest archive page, which lists
 *    the new video);
 * 2. documents that changed (a feed now listing the new video, and linking to that new page),
 *    again a video's before a user's;
 * 3. the site-wide files: first the plain ones (opensearch.xml, crossdomain.xml), then the
 *    numbered sitemap parts, then the sitemap index that lists them, last the files that name
 *    the others (`deployLast` of their descriptor: robots.txt);
 * 4. deletions of what the tree no longer has, once nothing uploaded links to it.
 * Each step ends before the next begins. Within a document, its compressed forms go before its
 * plain keys, as the build writes them.
 */

/** One object to write. */
export interface PlannedObject {
  /** Full object key, prefix included. */
  key: string;
  /** File under the tree whose bytes it gets. */
  file: string;
  size: number;
  sha256: string;
  md5: string;
  contentType: string;
  cacheControl: string;
  contentEncoding?: string;
  link?: string;
}

/** A document of the tree with every object it is published as. */
export interface PlannedDocument {
  /** The document's file under the tree. */
  file: string;
  format: string;
  /** DOCUMENT_RANKS for video and user documents; SITE_RANKS for the site files. */
  rank: number;
  /** Its compressed forms' objects, then its own keys'. */
  objects: PlannedObject[];
}

/** A video's documents go up before a user's in each step: a user's feeds and archive pages list videos, no video's document lists a user's. */
export const DOCUMENT_RANKS = { video: 0, user: 1 } as const;

/** The site files after every document: plain, numbered parts, their index, `deployLast` (robots.txt). */
export const SITE_RANKS = { plain: 2, parts: 3, index: 4, last: 5 } as const;

/** The rank of a site file in the upload order. */
function siteRank(match: Extract<RouteMatch, { kind: 'site' }>): number {
  if (match.format.deployLast === true) return SITE_RANKS.last;
  if (match.format.alsoWrites === undefined) return SITE_RANKS.plain;
  return match.file === match.format.file ? SITE_RANKS.index : SITE_RANKS.parts;
}

/** Whether a shard's deploy publishes a document: its key's part, or the site files from part 1. */
export function ownsMatch(shard: ShardSpec | undefined, match: PlaceMatch): boolean {
  return match.kind === 'site' ? ownsSiteFiles(shard) : ownsKey(shard, match.key);
}

/** The documents of a manifest this deploy publishes, each with its objects below `prefix`. */
export function planDocuments(manifest: Manifest, routes: Routes, prefix: string, shard: ShardSpec | undefined): PlannedDocument[] {
  return manifest.files.flatMap((entry) => planDocument(entry, routes, prefix, shard) ?? []);
}

/** A manifest entry as the document this deploy publishes, or null when it is not this deploy's to publish. */
export function planDocument(entry: ManifestEntry, routes: Routes, prefix: string, shard: ShardSpec | undefined): PlannedDocument | null {
  const match = routeOfFile(routes, entry.file);
  if (match === null || !ownsMatch(shard, match)) return null;
  return {
    file: entry.file,
    format: match.format.name,
    rank: match.kind === 'site' ? siteRank(match) : match.format.scope === 'video' ? DOCUMENT_RANKS.video : DOCUMENT_RANKS.user,
    objects: objectsOf(entry, prefix),
  };
}

function objectsOf(entry: ManifestEntry, prefix: string): PlannedObject[] {
  const base = { contentType: entry.contentType, cacheControl: entry.cacheControl, ...(entry.link === undefined ? {} : { link: entry.link }) };
  const forms = entry.compressed.flatMap((form) =>
    entry.keys.map((key) => ({
      ...base,
      key: `${prefix}${key}.${form.contentEncoding === 'gzip' ? 'gz' : 'br'}`,
      file: form.file,
      size: form.size,
      sha256: form.sha256,
      md5: form.md5,
      contentEncoding: form.contentEncoding,
    })),
  );
  const plain = entry.keys.map((key) => ({ ...base, key: `${prefix}${key}`, file: entry.file, size: entry.size, sha256: entry.sha256, md5: entry.md5 }));
  return [...forms, ...plain];
}

/**
 * The document file an object key of the store publishes (for its URL), or null when the key is
 * not this shard's: a document's key of the format table (or a compressed form of one) below the
 * prefix, in this shard's part. Other objects (the operator's, another shard's) are never deleted.
 */
export function ownedDocumentOf(routes: Routes, prefix: string, key: string, shard: ShardSpec | undefined): string | null {
  if (!key.startsWith(prefix)) return null;
  const below = key.slice(prefix.length);
  const form = compressedFormOf(below);
  const documentKey = form === null ? below : form.document;
  const segments = documentKey.split('/');
  if (segments.some((s, i) => (s === '' && i !== segments.length - 1) || s === '.' || s === '..')) return null;
  const match = matchRoute(routes, segments);
  return match !== null && ownsMatch(shard, match) ? match.file : null;
}
