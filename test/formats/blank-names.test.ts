import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import { parseHtmlPage, allElements } from '../helpers/oembed-consumers.js';
import { buildInMemory, createTestDb, insertRow, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';
import { xpath } from '../helpers/validators.js';

/**
 * A display name blank once the characters XML cannot carry are removed (U+0007, spaces) names no
 * one: every document that shows a person's name shows the username instead, as the Atom feed,
 * itunes:author and the video sitemap always did. Read back by xmllint, parse5 and JSON.parse.
 */

const BLANK = { bell: '\u0007', spaces: '   ', mixed: ' \u0001\t' };

describe('a display name blank once XML can carry it', () => {
  it('gives way to the username in FOAF (own name and friends), hCard, OPML and the JSON-LD of the head snippet', () => {
    const { db, file } = createTestDb();
    const named = insertUser(db, { username: 'named', display_name: 'Ann Named' });
    for (const [username, display_name] of Object.entries(BLANK)) {
      const u = insertUser(db, { username, display_name });
      insertVideo(db, u.id, { public_id: `v-${username}`, created_at: T0 });
      insertRow(db, 'friendships', { user_id: named.id, friend_id: u.id, created_at: T0 });
      insertRow(db, 'reading_list', { id: u.id, user_id: u.id, title: 'A blog', description: '', html_url: 'https://b.example/', xml_url: 'https://b.example/feed', position: 0, created_at: T0, updated_at: T0 });
    }
    const config = testConfig({ videoHead: { ...DEFAULT_CONFIG.videoHead, file: true } });
    const { writer } = buildInMemory(file, { only: new Set(['foaf', 'hcard', 'opml', 'head']), config });
    const text = (path: string) => writer.text(path);
    const local = (name: string) => `*[local-name()='${name}']`;
    for (const username of Object.keys(BLANK)) {
      const foaf = text(`${username}/foaf/index.rdf`);
      expect(xpath(foaf, `string(//${local('PersonalProfileDocument')}/${local('title')})`), username).toBe(`FOAF profile of ${username}`);
      expect(xpath(foaf, `string(//${local('Person')}[@*[local-name()='ID']='me' or contains(@*[local-name()='about'], '#me')][1]/${local('name')})`), username).toBe(username);
      const card = parseHtmlPage(text(`${username}/hcard/index.html`));
      expect(allElements(card.body).find((e) => (e.attrs.class ?? '').split(' ').includes('fn'))?.children, username).toEqual([{ text: username }]);
      expect(xpath(text(`${username}/opml/index.opml`), 'string(/opml/head/ownerName)'), username).toBe(username);
      const head = text(`v-${username}/embed/head.html`);
      const jsonLd = JSON.parse(/<script type="application\/ld\+json">(.*)<\/script>/s.exec(head)![1]!) as { author: { name: string } };
      expect(jsonLd.author.name, username).toBe(username);
    }
    // A friend's name in the FOAF of who knows them.
    const friends = xpath(text('named/foaf/index.rdf'), `//${local('knows')}/${local('Person')}/${local('name')}/text()`);
    expect(friends.split('\n').filter(Boolean).sort()).toEqual(Object.keys(BLANK).sort());
  });
});
