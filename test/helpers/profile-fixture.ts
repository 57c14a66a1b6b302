import type Database from 'better-sqlite3';
import { HOSTILE } from '../../src/db/demo-data.js';
import type { MemoryWriter } from '../../src/pipeline/write/output-writer.js';
import { buildInMemory, createTestDb, insertRow, insertUser, insertVideo, T0 } from './site-fixture.js';

/**
 * A small site for the per-user profile documents (recommendations, FOAF, hCard, XSPF, APML,
 * OPML), inserted into a fresh database by each test that needs it:
 * - `alice` has everything and shows everything;
 * - `bob` is her public friend; `carol` (suspended) and `dave` (deleted) are friends who must not show;
 * - `hidden` has contact details but shows none of them, saved nothing and made her history public;
 * - `nobody` has nothing at all;
 * - `mallory` writes hostile text in every field.
 */

export const ALICE = {
  email: 'alice@mail.example.net',
  phone: '+1 555 0100',
  msn: 'alice@msn.example.net',
  jabber: 'alice@jabber.example.net',
} as const;

export const HIDDEN = {
  email: 'hidden.person@private.example.net',
  phone: '+44 20 7946 0999',
  street: '99 Secret Lane',
  aim: 'hiddenaim',
} as const;

/** Every kind of hostile text at once, for fields that take free text. */
export const HOSTILE_TEXT = [HOSTILE.markup, HOSTILE.cdataEnd, HOSTILE.entities, HOSTILE.quotes, HOSTILE.controls, HOSTILE.bidi, HOSTILE.astral].join(' | ');

export interface ProfileSite {
  ids: { alice: number; bob: number; carol: number; dave: number; hidden: number; nobody: number; mallory: number };
  videos: { bobPublic: string; bobPrivate: string; carolPublic: string; hostile: string };
}

export function seedProfiles(db: Database.Database): ProfileSite {
  for (const [id, name] of [[1, 'Music'], [2, 'Film & Animation'], [3, 'News']] as const) insertRow(db, 'categories', { id, name });
  for (const [id, name] of [[1, 'cats'], [2, 'jazz'], [3, `<tag> & "${HOSTILE.cdataEnd}"`]] as const) insertRow(db, 'tags', { id, name });

  const alice = insertUser(db, {
    id: 1,
    username: 'alice',
    display_name: 'Alice Liddell',
    title: 'Dr',
    given_name: 'Alice',
    family_name: 'Liddell',
    email: ALICE.email,
    show_email: 1,
    phone: ALICE.phone,
    show_phone: 1,
    homepage_url: 'https://home.example.net/~alice/',
    avatar_url: 'https://videos.example.org/avatars/alice.jpg',
    openid_url: 'https://openid.example.net/alice',
    aim_chat_id: 'aliceaim',
    yahoo_chat_id: 'alice_yahoo',
    msn_chat_id: ALICE.msn,
    icq_chat_id: '123456789',
    jabber_chat_id: ALICE.jabber,
    show_chat_ids: 1,
    street_address: '1 Rabbit Hole',
    locality: 'Oxford',
    region: 'OXF',
    region_name: 'Oxfordshire',
    postal_code: 'OX1 1AA',
    country_name: 'United Kingdom',
    show_address: 1,
    history_public: 1,
    created_at: T0,
    updated_at: T0 + 100,
  }).id;
  const bob = insertUser(db, {
    id: 2,
    username: 'bob',
    display_name: 'Bob Builder',
    email: 'bob@mail.example.net',
    avatar_url: 'https://videos.example.org/avatars/bob.jpg',
    homepage_url: 'https://bob.example.net/',
  }).id;
  const carol = insertUser(db, { id: 3, username: 'carol', display_name: 'Carol Suspended', email: 'carol@mail.example.net', state: 'suspended' }).id;
  const dave = insertUser(db, { id: 4, username: 'dave', display_name: 'Dave Deleted', email: 'dave@mail.example.net', state: 'deleted' }).id;
  const hidden = insertUser(db, {
    id: 5,
    username: 'hidden',
    display_name: 'Hidden Person',
    email: HIDDEN.email,
    phone: HIDDEN.phone,
    aim_chat_id: HIDDEN.aim,
    street_address: HIDDEN.street,
    locality: 'Nowhere',
    country_name: 'Secretland',
    history_public: 1,
  }).id;
  const nobody = insertUser(db, { id: 6, username: 'nobody', display_name: '', created_at: T0 + 5, updated_at: T0 + 6 }).id;
  const mallory = insertUser(db, {
    id: 7,
    username: 'mallory',
    display_name: `Mallory ${HOSTILE_TEXT}`,
    title: HOSTILE.quotes,
    given_name: HOSTILE_TEXT,
    family_name: HOSTILE.markup,
    email: 'mallory+<x>&"y"@mail.example.net',
    show_email: 1,
    phone: `+1 555 ${HOSTILE.markup}`,
    show_phone: 1,
    homepage_url: HOSTILE.javascriptUrl,
    avatar_url: 'data:image/png;base64,AAAA',
    openid_url: 'https://openid.example.net/mallory?a=1&b="2"',
    aim_chat_id: HOSTILE_TEXT,
    show_chat_ids: 1,
    street_address: HOSTILE_TEXT,
    locality: HOSTILE.markup,
    region: HOSTILE.quotes,
    region_name: HOSTILE.cdataEnd,
    postal_code: HOSTILE.entities,
    country_name: HOSTILE.bidi,
    show_address: 1,
  }).id;

  // Friends: only bob is public.
  for (const friend of [bob, carol, dave]) insertRow(db, 'friendships', { user_id: alice, friend_id: friend, created_at: T0 });
  insertRow(db, 'friendships', { user_id: mallory, friend_id: alice, created_at: T0 });

  insertRow(db, 'online_accounts', { user_id: alice, service_homepage_url: 'https://photos.example.com/', account_name: 'alice.photos', profile_url: 'https://photos.example.com/people/alice l' });
  insertRow(db, 'online_accounts', { user_id: alice, service_homepage_url: 'https://www.example.com/', account_name: 'acct1', profile_url: HOSTILE.javascriptUrl });
  insertRow(db, 'online_accounts', { user_id: mallory, service_homepage_url: 'https://www.example.com/', account_name: HOSTILE_TEXT, profile_url: 'https://www.example.com/?q=<x>&"y"' });
  for (const tag of [1, 2]) insertRow(db, 'interests', { user_id: alice, tag_id: tag });
  insertRow(db, 'interests', { user_id: mallory, tag_id: 3 });

  const bobPublic = insertVideo(db, bob, { id: 101, public_id: 'bobclip', title: 'Bob builds a shed', description: 'Hammer time', duration_seconds: 125, category_id: 1 });
  const bobPrivate = insertVideo(db, bob, { id: 102, public_id: 'bobsecret', title: 'Bob secret clip', visibility: 'private' });
  const carolPublic = insertVideo(db, carol, { id: 103, public_id: 'carolclip', title: 'Carol suspended clip' });
  const hostile = insertVideo(db, mallory, { id: 104, public_id: 'malclip', title: HOSTILE_TEXT, description: `${HOSTILE_TEXT} `.repeat(2000), duration_seconds: null });

  // alice saved a public video, a private one and one by a suspended user: only the first may show.
  insertRow(db, 'saved_videos', { user_id: alice, video_id: bobPublic.id, position: 0, saved_at: T0 });
  insertRow(db, 'saved_videos', { user_id: alice, video_id: bobPrivate.id, position: 1, saved_at: T0 });
  insertRow(db, 'saved_videos', { user_id: alice, video_id: carolPublic.id, position: 2, saved_at: T0 });
  insertRow(db, 'saved_videos', { user_id: mallory, video_id: hostile.id, position: 0, saved_at: T0 });
  // hidden saved nothing, so her public history is her playlist.
  insertRow(db, 'viewing_history', { user_id: hidden, video_id: bobPrivate.id, viewed_at: T0 + 30 });
  insertRow(db, 'viewing_history', { user_id: hidden, video_id: bobPublic.id, viewed_at: T0 + 20 });

  // Recommendations: ten public, newest last inserted; one private; one with a script link; one with a data: image.
  for (let r = 0; r < 10; r++) {
    insertRow(db, 'recommendations', {
      user_id: alice,
      title: `Pick ${r}`,
      link: `https://elsewhere.example.com/watch?v=${r}&t=1`,
      image: `https://elsewhere.example.com/thumb/${r}.jpg`,
      description: r === 9 ? 'The best one' : '',
      duration_seconds: r === 9 ? 7507 : r === 8 ? null : 65 + r,
      created_at: T0 + 1000 + r,
    });
  }
  insertRow(db, 'recommendations', { user_id: alice, title: 'Private pick', link: 'https://elsewhere.example.com/p', image: 'https://elsewhere.example.com/p.jpg', is_public: 0, created_at: T0 + 5000 });
  insertRow(db, 'recommendations', { user_id: alice, title: 'Script pick', link: HOSTILE.javascriptUrl, image: 'https://elsewhere.example.com/s.jpg', created_at: T0 + 5001 });
  insertRow(db, 'recommendations', { user_id: alice, title: 'Data pick', link: 'https://elsewhere.example.com/d', image: 'data:image/png;base64,AAAA', created_at: T0 + 5002 });
  insertRow(db, 'recommendations', { user_id: mallory, title: HOSTILE_TEXT, link: 'https://elsewhere.example.com/m?a=<b>&c="d"', image: 'https://elsewhere.example.com/m.jpg', description: HOSTILE_TEXT, duration_seconds: 59, created_at: T0 });

  // Attention: Music scored, News scored without a date, Film unused.
  insertRow(db, 'attention_concepts', { user_id: alice, category_id: 1, value: 0.75, updated_at: T0 + 86_400 });
  insertRow(db, 'attention_concepts', { user_id: alice, category_id: 3, value: 0.2, updated_at: null });
  insertRow(db, 'attention_sources', { user_id: alice, video_id: bobPublic.id, supplier_id: bob, value: 0.5, updated_at: T0 + 2 * 86_400 });
  insertRow(db, 'attention_sources', { user_id: alice, video_id: bobPrivate.id, supplier_id: bob, value: 0.9, updated_at: T0 });
  insertRow(db, 'attention_sources', { user_id: alice, video_id: bobPublic.id, supplier_id: carol, value: 0.8, updated_at: T0 });
  insertRow(db, 'attention_sources', { user_id: mallory, video_id: hostile.id, supplier_id: mallory, value: 1, updated_at: T0 });

  // Reading list: two Music feeds, one News, one uncategorised, one with a script feed URL.
  const feed = (user: number, category: number | null, title: string, n: number, extra: Record<string, unknown> = {}) =>
    insertRow(db, 'reading_list', {
      user_id: user,
      category_id: category,
      title,
      description: `About ${title}`,
      html_url: `https://blogs.example.net/${n}/`,
      xml_url: `https://blogs.example.net/${n}/feed.xml`,
      position: n,
      created_at: T0 + n * 86_400,
      updated_at: T0 + (n + 10) * 86_400,
      ...extra,
    });
  feed(alice, 1, 'Jazz notes', 1);
  feed(alice, 1, 'Guitar weekly', 2, { html_url: HOSTILE.javascriptUrl });
  feed(alice, 3, 'World news', 3);
  feed(alice, null, 'Loose feed', 4);
  feed(alice, 3, 'Script feed', 5, { xml_url: HOSTILE.javascriptUrl });
  feed(mallory, 2, HOSTILE_TEXT, 6, { description: HOSTILE_TEXT });

  return {
    ids: { alice, bob, carol, dave, hidden, nobody, mallory },
    videos: { bobPublic: bobPublic.publicId, bobPrivate: bobPrivate.publicId, carolPublic: carolPublic.publicId, hostile: hostile.publicId },
  };
}

/** Text that must appear in no document of anyone but its owner's shown fields. */
export const PRIVATE_STRINGS = [
  HIDDEN.email,
  HIDDEN.phone,
  HIDDEN.street,
  HIDDEN.aim,
  'Secretland',
  'carol',
  'Carol Suspended',
  'dave',
  'Dave Deleted',
  'bobsecret',
  'Bob secret clip',
  'Private pick',
  'Script pick',
  'Data pick',
  'Script feed',
  'javascript:',
  'data:image',
  ALICE.msn,
  ALICE.jabber,
  'carol@mail.example.net',
  'dave@mail.example.net',
  'bob@mail.example.net',
] as const;

/** The profile fixture built in memory with only `formats`; the database goes when the test ends. */
export function buildProfiles(formats: ReadonlySet<string>): MemoryWriter {
  const { db, file } = createTestDb();
  seedProfiles(db);
  return buildInMemory(file, { only: formats }).writer;
}
