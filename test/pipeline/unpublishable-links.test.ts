import { describe, expect, it } from 'vitest';
import { buildInMemory, createTestDb, insertUser, insertVideo } from '../helpers/site-fixture.js';

/**
 * A video or a user the build skips for its name (docs/database.md, "Names") is in no other
 * document either: no item, track, source or friend that links to a page the build never writes.
 * Read from the documents' text: every URL under the base must name a file or folder of the tree.
 */

const BASE = 'https://videos.example.org';

/** Every URL under the base in a document, as written (entities of `&` undone). */
function siteUrls(text: string): string[] {
  return [...text.matchAll(/https:\/\/videos\.example\.org[^"'<>\s\\]*/g)].map((m) => m[0].replaceAll('&amp;', '&'));
}

describe('rows skipped for their name', () => {
  it('are listed nowhere: every link into the site names a file of the tree', () => {
    const { db, file } = createTestDb();
    const ann = insertUser(db, { username: 'ann' });
    const bob = insertUser(db, { username: 'bob' });
    const hidden = insertUser(db, { username: '.hidden' });
    const videos = ['..', 'sitemap.xml', 'tab\tname', 'ok1', 'ok2'].map((publicId) => insertVideo(db, ann.id, { public_id: publicId }));
    // Skipped for its file URL rather than its name.
    videos.push(insertVideo(db, ann.id, { public_id: 'nofile', file_url: 'javascript:alert(1)' }));
    // Uploaded by a user skipped for their name, saved by bob.
    videos.push(insertVideo(db, hidden.id, { public_id: 'byhidden' }));
    videos.forEach((v, i) => db.prepare('INSERT INTO saved_videos (user_id, video_id, position, saved_at) VALUES (?, ?, ?, 0)').run(bob.id, v.id, i));
    for (const friend of [ann, hidden]) db.prepare('INSERT INTO friendships (user_id, friend_id, created_at) VALUES (?, ?, 0)').run(bob.id, friend.id);
    videos.forEach((v) => db.prepare('INSERT INTO attention_sources (user_id, video_id, supplier_id, value, updated_at) VALUES (?, ?, ?, 0.5, 0)').run(bob.id, v.id, ann.id));
    db.prepare('INSERT INTO attention_sources (user_id, video_id, supplier_id, value, updated_at) VALUES (?, ?, ?, 0.4, 0)').run(bob.id, videos[3]!.id, hidden.id);
    // Groups bob belongs to: one owned by the skipped user, one by ann.
    for (const [slug, owner] of [['hiddens', hidden], ['anns', ann]] as const) {
      const group = db.prepare('INSERT INTO groups (slug, title, owner_id, created_at, updated_at) VALUES (?, ?, ?, 0, 0)').run(slug, `Group ${slug}`, owner.id);
      db.prepare('INSERT INTO group_members (group_id, user_id, joined_at) VALUES (?, ?, 0)').run(group.lastInsertRowid, bob.id);
    }
    db.close();

    const { writer, report } = buildInMemory(file);
    expect(report.skipped.map((s) => `${s.kind}:${s.key}`).sort()).toEqual(['user:.hidden', 'video:..', 'video:nofile', 'video:sitemap.xml', 'video:tab\tname']);
    const files = [...writer.files.keys()];
    const dangling: string[] = [];
    for (const [path, body] of writer.files) {
      for (const url of siteUrls(body.toString('utf8'))) {
        const target = decodeURIComponent(new URL(url).pathname).slice(1);
        // The site's own search and group pages (opensearch.xml, the Atom feeds) are not files of the tree.
        if (target === 'search' || target.startsWith('groups/')) continue;
        if (target !== '' && !files.some((f) => f === target || f.startsWith(target.endsWith('/') ? target : `${target}/`))) dangling.push(`${path}: ${url}`);
      }
    }
    expect(dangling).toEqual([]);
    // The published ones are listed where the skipped ones were.
    expect(writer.text('ann/rss/index.rss')).toContain(`${BASE}/ok1/`);
    expect(writer.text('bob/xspf/index.xspf')).toContain(`${BASE}/ok2/`);
    expect(writer.text('bob/foaf/index.rdf')).toContain(`${BASE}/ann/foaf/`);
    expect(writer.text('bob/apml/index.apml')).toContain('ok1');
    // The skipped user's video is published nowhere, as a video of a user who is not active; their group is not bob's.
    expect(files.filter((f) => f.startsWith('byhidden/'))).toEqual([]);
    for (const [path, body] of writer.files) expect(body.toString('utf8'), path).not.toContain('byhidden');
    expect(writer.text('bob/atom/index.atom')).toContain('Group anns');
    expect(writer.text('bob/atom/index.atom')).not.toContain('Group hiddens');
  });
});
