import type Database from 'better-sqlite3';
import { expect } from 'vitest';
import { cli } from './cli.js';
import { URL_TABLE } from './served-urls.js';
import { insertVideo } from './site-fixture.js';

/**
 * What a deploy of a built tree must leave in a store, by the documents rather than by the deploy's
 * own code: the keys of `vidfeeds hosting manifest`, each document's Content-Type by the product's
 * URL table (an independent copy, served-urls.ts), its Cache-Control by docs/hosting.md.
 */

export interface ManifestFile {
  file: string;
  keys: string[];
  link?: string;
  compressed: Array<{ file: string; contentEncoding: string }>;
}

export interface ExpectedObject {
  /** The file of the tree whose bytes the object holds. */
  file: string;
  /** Its Content-Encoding, for a pre-compressed form. */
  encoding?: string;
  /** The document it is a form of (the file itself unless compressed). */
  document: string;
  link?: string;
}

/** The tree's manifest, as `vidfeeds hosting manifest` prints it. */
export function manifest(out: string, config: string): ManifestFile[] {
  const result = cli(['hosting', 'manifest', '--root', out, '--config', config]);
  expect(result.code, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as { files: ManifestFile[] }).files;
}

/** Every object a tree's manifest asks for, by key under `prefix`, with the file whose bytes it holds. */
export function expectedObjects(files: readonly ManifestFile[], prefix: string): Map<string, ExpectedObject> {
  const objects = new Map<string, ExpectedObject>();
  for (const f of files) {
    for (const key of f.keys) {
      objects.set(`${prefix}/${key}`, { file: f.file, document: f.file, link: f.link });
      for (const form of f.compressed) objects.set(`${prefix}/${key}${form.file.slice(form.file.lastIndexOf('.'))}`, { file: form.file, encoding: form.contentEncoding, document: f.file, link: f.link });
    }
  }
  return objects;
}

/** The Content-Type of a document by the product's URL table. */
export function productType(file: string): string {
  const parts = file.split('/');
  const pattern = parts.length === 1 ? file : `<x>/${parts.slice(1).join('/')}`.replace(/\/archive\/\d+\//, '/archive/<N>/');
  const row = URL_TABLE.find((r) => r.file.replace(/^<(user|video)>/, '<x>') === pattern || (parts.length === 1 && /^sitemap-.*\.xml$/.test(file) && r.file === 'sitemap.xml'));
  if (row === undefined) throw new Error(`no row of the URL table for ${file}`);
  return row.type;
}

/** The documented default Cache-Control of a document's class (docs/hosting.md). */
export function productCacheControl(file: string): string {
  const dir = file.split('/')[1];
  if (dir === undefined) return 'public, max-age=3600';
  return ['foaf', 'hcard', 'oembed', 'embed'].includes(dir) ? 'public, max-age=86400' : 'public, max-age=900';
}

/**
 * The change a deploy test publishes: the first public video's title edited, the second made
 * private (its documents removed), a video `brandnew1` added. Returns the hidden video's id.
 */
export function editDemoSite(db: Database.Database): { hidden: string } {
  const uploader = db.prepare(`SELECT user_id AS id FROM videos WHERE visibility = 'public' ORDER BY id LIMIT 1`).get() as { id: number };
  const [edited, hidden] = db.prepare(`SELECT public_id FROM videos WHERE visibility = 'public' ORDER BY id LIMIT 2`).all() as Array<{ public_id: string }>;
  db.prepare(`UPDATE videos SET title = 'A title edited for the deploy' WHERE public_id = ?`).run(edited!.public_id);
  db.prepare(`UPDATE videos SET visibility = 'private' WHERE public_id = ?`).run(hidden!.public_id);
  insertVideo(db, uploader.id, { public_id: 'brandnew1', title: 'A new video' });
  return { hidden: hidden!.public_id };
}
