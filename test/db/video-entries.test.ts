import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { createTestDb, insertRow, insertUser, insertVideo, T0 } from '../helpers/site-fixture.js';

/**
 * A build reads videos through `videoEntries`: unsharded, one statement with every column; in a
 * shard of several, ids first and a look-up per row. Both must give the rows `videos` lists, in
 * its order, and the views `video` gives: the same privacy rules and the same unpublishable rows.
 */
function fixture() {
  const { db, file } = createTestDb();
  const alice = insertUser(db, { username: 'alice', display_name: 'Alice', email: 'alice@example.org', avatar_url: 'https://img.example.org/a.png' });
  const bob = insertUser(db, { username: 'bob' });
  const suspended = insertUser(db, { username: 'suspended', state: 'suspended' });
  insertRow(db, 'categories', { id: 1, name: 'Music' });
  insertRow(db, 'tags', { id: 1, name: 'zither' });
  insertRow(db, 'tags', { id: 2, name: 'accordion' });
  insertRow(db, 'tags', { id: 3, name: 'Banjo' });
  const tagged = insertVideo(db, alice.id, {
    public_id: 'tagged', title: 'Tagged', category_id: 1, width: 640, height: 480, captions_url: 'https://cdn.example.org/c.vtt', updated_at: T0 + 99,
  });
  for (const tag of [1, 2, 3]) insertRow(db, 'video_tags', { video_id: tagged.id, tag_id: tag });
  insertVideo(db, alice.id, { public_id: 'b-plain' });
  insertVideo(db, alice.id, { public_id: 'private', visibility: 'private' });
  insertVideo(db, alice.id, { public_id: 'bad-file', file_url: 'javascript:alert(1)' });
  insertVideo(db, bob.id, { public_id: 'bad-thumb', thumbnail_url: '/relative.jpg' });
  insertVideo(db, bob.id, { public_id: 'a/b' });
  insertVideo(db, suspended.id, { public_id: 'of-suspended' });
  db.close();
  const readOnly = new Database(file, { readonly: true });
  return { reader: new SiteReader(readOnly, readLimits(8)), close: () => readOnly.close(), tagged };
}

describe('SiteReader.videoEntries', () => {
  it('lists what `videos` lists and reads what `video` reads, read as one statement or by look-ups', () => {
    const { reader, close, tagged } = fixture();
    try {
      reader.snapshot(() => {
        for (const ofUser of [undefined, 'alice', 'bob', 'suspended', 'nobody']) {
          const rows = [...reader.videos(ofUser)];
          for (const lookUp of [false, true]) {
            const entries = [...reader.videoEntries(ofUser, { lookUp })];
            expect(entries.map((e) => e.row), `${ofUser} ${lookUp}`).toEqual(rows);
            for (const entry of entries) expect(entry.read(), `${entry.row.publicId} ${lookUp}`).toEqual(reader.video(entry.row.id));
          }
        }
        expect([...reader.videos()].map((r) => r.publicId)).toEqual(['a/b', 'b-plain', 'bad-file', 'bad-thumb', 'tagged']);
        const read = (lookUp: boolean) => new Map([...reader.videoEntries(undefined, { lookUp })].map((e) => [e.row.publicId, e.read()]));
        for (const lookUp of [false, true]) {
          const views = read(lookUp);
          expect(views.get('bad-file')).toEqual({ problem: 'has a file_url that is not an absolute http(s) URL' });
          expect(views.get('bad-thumb')).toEqual({ problem: 'has a thumbnail_url that is not an absolute http(s) URL' });
          expect(views.get('tagged')).toEqual({
            id: tagged.id,
            publicId: 'tagged',
            title: 'Tagged',
            description: `About video ${tagged.id}`,
            durationSeconds: 75,
            fileUrl: `https://cdn.example.org/v/${tagged.id}.flv`,
            fileSize: 123456,
            fileType: 'video/x-flv',
            width: 640,
            height: 480,
            thumbnailUrl: `https://cdn.example.org/t/${tagged.id}.jpg`,
            thumbnailWidth: 120,
            thumbnailHeight: 90,
            captionsUrl: 'https://cdn.example.org/c.vtt',
            category: 'Music',
            // SQLite's order (BINARY: bytes), not a locale's.
            tags: ['Banjo', 'accordion', 'zither'],
            uploader: {
              username: 'alice',
              displayName: 'Alice',
              avatarUrl: 'https://img.example.org/a.png',
              homepageUrl: null,
              emailSha1: createHash('sha1').update('mailto:alice@example.org').digest('hex'),
            },
            createdAt: new Date((T0 + tagged.id) * 1000),
            updatedAt: new Date((T0 + 99) * 1000),
          });
        }
      });
    } finally {
      close();
    }
  });
});
