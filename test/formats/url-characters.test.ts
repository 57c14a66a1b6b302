import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildInMemory, createTestDb, insertRow, insertUser, insertVideo, T0 } from '../helpers/site-fixture.js';
import { jing, SCHEMAS, xmllintSchema } from '../helpers/validators.js';

/**
 * Stored URLs that the WHATWG parser accepts but leaves with characters RFC 3986 allows nowhere
 * in a path, query or fragment (a `%` without two hex digits, `[`, `]`, a second `#`): every
 * document that carries them still meets its grammar, as xmllint and jing read `xsd:anyURI`.
 */

const RECOMMENDATIONS_XSD = resolve(import.meta.dirname, '../../docs/schemas/recommendations.xsd');

describe('URLs with characters RFC 3986 does not allow where they stand', () => {
  it('leave the sitemap, XSPF, oEmbed XML and recommendation documents valid', () => {
    const { db, file, cleanup } = createTestDb();
    try {
      const ann = insertUser(db, { username: 'ann', avatar_url: 'https://cdn.example.org/a/100%.png' });
      insertVideo(db, ann.id, {
        id: 1,
        public_id: 'clip',
        file_url: 'https://cdn.example.org/v/[1].mp4?sig=%zz',
        thumbnail_url: 'https://cdn.example.org/t/%zz.jpg#a#b',
        captions_url: 'https://cdn.example.org/c/]].vtt',
      });
      insertRow(db, 'saved_videos', { user_id: ann.id, video_id: 1, position: 0, saved_at: T0 });
      insertRow(db, 'recommendations', {
        user_id: ann.id,
        title: 'R',
        link: 'https://elsewhere.example.com/watch?v=[x]',
        image: 'https://elsewhere.example.com/%.jpg',
        created_at: T0,
      });
      db.close();
      const { writer, report } = buildInMemory(file);
      expect(report.skipped).toEqual([]);
      expect(xmllintSchema(join(SCHEMAS, 'sitemap-with-video.xsd'), { sitemap: writer.text('sitemap.xml') })).toMatchObject({ ok: true });
      expect(jing(join(SCHEMAS, 'xspf-1_0.7.rng'), { xspf: writer.text('ann/xspf/index.xspf') })).toEqual({ ok: true, output: '' });
      expect(jing(join(SCHEMAS, 'oembed-1.0-response.rnc'), { oembed: writer.text('clip/oembed/xml') })).toEqual({ ok: true, output: '' });
      expect(xmllintSchema(RECOMMENDATIONS_XSD, { recs: writer.text('ann/openrecommender/index.xml') })).toMatchObject({ ok: true });
      // The same resources, their characters percent-encoded (what a server decodes them to is unchanged).
      expect(writer.text('clip/oembed/xml')).toContain('https://cdn.example.org/t/%25zz.jpg#a%23b');
      expect(writer.text('ann/openrecommender/index.xml')).toContain('https://elsewhere.example.com/watch?v=%5Bx%5D');
    } finally {
      cleanup();
    }
  });
});
