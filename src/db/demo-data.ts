import Database from 'better-sqlite3';
import { SCHEMA_VERSION } from './migrations.js';

/**
 * A deterministic demo site: the same `users` and `seed` always give the same database. It has
 * enough variety to exercise every document, and scales with `users` for benchmarks.
 *
 * Two shapes (`DemoShape`): `demo`, the default, where users average about five videos and
 * documents are small; and `feed-heavy`, where every generated user fills their feeds: 20 to 30
 * uploads of which at least 20 public, member of 22 to 28 groups (a few are hidden or have an
 * inactive owner, so most Atom feeds show 20), 8 to 12 published recommendations, 12 to 20 saved
 * videos and several friends. In both, about 2% of generated users are suspended, and the showcase
 * users below are the same.
 *
 * Fixed showcase users come first, then generated ones:
 * - `alice` has everything: shown contact details, chat ids, address, friends, accounts, more than
 *   20 uploads, groups, saves, public history, recommendations, attention data and a reading list;
 * - `bob` has nothing at all;
 * - `carol` is suspended and `dave` deleted: nothing of theirs may appear anywhere;
 * - `مريم` (right-to-left), `zoë`, `山田太郎` and `🎬astral` carry Unicode names;
 * - `mallory` writes hostile text everywhere: markup, `]]>`, quotes, ampersand entities, control
 *   characters, right-to-left overrides and a 200 KB description.
 */

/** What the generated users look like: see the comment above. */
export const DEMO_SHAPES = ['demo', 'feed-heavy'] as const;
export type DemoShape = (typeof DEMO_SHAPES)[number];

export interface DemoOptions {
  users: number;
  seed: number;
  /** `demo` when absent. */
  shape?: DemoShape;
}

export const DEMO_DEFAULTS: Required<DemoOptions> = { users: 60, seed: 1, shape: 'demo' };

/**
 * A feed-heavy user's counts. Uploads: the first PUBLIC_UPLOADS are public, so every RSS feed is
 * full; the rest may be private, as on a real site.
 */
const FEED_HEAVY = { publicUploads: 20, uploads: [20, 30], groups: [22, 28], recommendations: [8, 12], saves: [12, 20], friends: [3, 10] } as const;

/** 2024-01-01T00:00:00Z: demo times count from here, so they never depend on the clock. */
const EPOCH = 1_704_067_200;
const DAY = 86_400;

/** Small, fast, seedable PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const HOSTILE = {
  markup: `<script>alert("x")</script><b onmouseover='alert(1)'>bold</b>`,
  cdataEnd: 'ends ]]> here ]]]]> and <![CDATA[ opens',
  entities: 'AT&T &amp; &copy; &#65; &lt;tag&gt; & alone',
  quotes: `"double" 'single' \`back\``,
  controls: 'bell\u0007 nul\u0000 esc\u001b vt\u000b ff\u000c del\u007f c1\u0085 fffe\ufffe',
  bidi: 'left \u202eright-to-left override\u202c \u200fmark',
  astral: 'astral 🎬😀𝕏 chars',
  javascriptUrl: 'javascript:alert(document.cookie)',
};

const CATEGORIES = ['Music', 'Comedy', 'Film & Animation', 'News', 'Science & Tech', 'Sports', 'Travel', 'Pets & Animals', 'Education', 'Gaming'];
const TAG_WORDS = ['live', 'cover', 'tutorial', 'funny', 'cats', 'travel', 'nature', 'retro', 'remix', 'howto', 'vlog', 'space', 'chess', 'guitar', 'drums', 'jazz', 'news', 'review', 'unboxing', 'speedrun'];
const WORDS = ['sunset', 'river', 'concert', 'kitten', 'mountain', 'robot', 'recipe', 'garden', 'city', 'ocean', 'lesson', 'trick', 'journey', 'festival', 'storm', 'dance', 'train', 'bridge', 'forest', 'night'];
const FIRST = ['Ann', 'Ben', 'Chloe', 'Dmitri', 'Eve', 'Femi', 'Grace', 'Hiro', 'Ines', 'Jon', 'Kemal', 'Lena', 'Mateo', 'Nora', 'Omar', 'Priya'];
const LAST = ['Smith', 'García', 'Okafor', 'Nguyen', 'Müller', 'Rossi', 'Kowalski', 'Tanaka', 'Silva', 'Haddad'];

interface ShowcaseUser {
  username: string;
  displayName: string;
  state?: 'active' | 'suspended' | 'deleted';
  everything?: boolean;
  nothing?: boolean;
  hostile?: boolean;
  uploads?: number;
}

const SHOWCASE: ShowcaseUser[] = [
  { username: 'alice', displayName: 'Alice Liddell', everything: true, uploads: 27 },
  { username: 'bob', displayName: 'Bob Nobody', nothing: true, uploads: 0 },
  { username: 'carol', displayName: 'Carol Suspended', state: 'suspended', uploads: 4 },
  { username: 'dave', displayName: 'Dave Deleted', state: 'deleted', uploads: 3 },
  { username: 'مريم', displayName: 'مريم العربية', uploads: 3 },
  { username: 'zoë', displayName: 'Zoë Ünïcödé', uploads: 2 },
  { username: '山田太郎', displayName: '山田 太郎', uploads: 2 },
  { username: '🎬astral', displayName: '🎬 Astral Plane 😀', uploads: 1 },
  { username: 'mallory', displayName: `Mallory ${HOSTILE.markup}`, hostile: true, uploads: 6 },
];

export function generateDemo(db: Database.Database, options: DemoOptions = DEMO_DEFAULTS): { users: number; videos: number } {
  const random = prng(options.seed);
  // Feed-heavy's counts are drawn only for that shape, so a demo database of a given size and
  // seed does not change when the feed-heavy shape does.
  const heavy = (options.shape ?? 'demo') === 'feed-heavy';
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
  const base = 'https://videos.example.org';

  const ins = {
    category: db.prepare('INSERT INTO categories (id, name) VALUES (?, ?)'),
    tag: db.prepare('INSERT INTO tags (id, name) VALUES (?, ?)'),
    user: db.prepare(`INSERT INTO users (id, username, display_name, title, given_name, family_name, email, show_email, phone, show_phone,
      homepage_url, avatar_url, openid_url, aim_chat_id, yahoo_chat_id, msn_chat_id, icq_chat_id, jabber_chat_id, show_chat_ids,
      street_address, locality, region, region_name, postal_code, country_name, show_address, history_public, state, created_at, updated_at)
      VALUES (@id, @username, @display_name, @title, @given_name, @family_name, @email, @show_email, @phone, @show_phone,
      @homepage_url, @avatar_url, @openid_url, @aim, @yahoo, @msn, @icq, @jabber, @show_chat_ids,
      @street, @locality, @region, @region_name, @postal_code, @country, @show_address, @history_public, @state, @created_at, @updated_at)`),
    account: db.prepare('INSERT INTO online_accounts (user_id, service_homepage_url, account_name, profile_url) VALUES (?, ?, ?, ?)'),
    interest: db.prepare('INSERT OR IGNORE INTO interests (user_id, tag_id) VALUES (?, ?)'),
    friend: db.prepare('INSERT OR IGNORE INTO friendships (user_id, friend_id, created_at) VALUES (?, ?, ?)'),
    video: db.prepare(`INSERT INTO videos (id, public_id, user_id, title, description, duration_seconds, file_url, file_size, file_type,
      width, height, thumbnail_url, thumbnail_width, thumbnail_height, captions_url, category_id, visibility, created_at, updated_at)
      VALUES (@id, @public_id, @user_id, @title, @description, @duration, @file_url, @file_size, @file_type,
      @width, @height, @thumbnail_url, 120, 90, @captions_url, @category_id, @visibility, @created_at, @updated_at)`),
    videoTag: db.prepare('INSERT OR IGNORE INTO video_tags (video_id, tag_id) VALUES (?, ?)'),
    group: db.prepare(`INSERT INTO groups (id, slug, title, description, owner_id, featured_video_id, hidden, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    member: db.prepare('INSERT OR IGNORE INTO group_members (group_id, user_id, joined_at) VALUES (?, ?, ?)'),
    saved: db.prepare('INSERT OR IGNORE INTO saved_videos (user_id, video_id, position, saved_at) VALUES (?, ?, ?, ?)'),
    history: db.prepare('INSERT INTO viewing_history (user_id, video_id, viewed_at) VALUES (?, ?, ?)'),
    recommendation: db.prepare(`INSERT INTO recommendations (user_id, title, link, image, description, duration_seconds, is_public, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
    concept: db.prepare('INSERT INTO attention_concepts (user_id, category_id, value, updated_at) VALUES (?, ?, ?, ?)'),
    source: db.prepare('INSERT INTO attention_sources (user_id, video_id, supplier_id, value, updated_at) VALUES (?, ?, ?, ?, ?)'),
    reading: db.prepare(`INSERT INTO reading_list (user_id, category_id, title, description, html_url, xml_url, position, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
  };

  let videoCount = 0;
  db.transaction(() => {
    CATEGORIES.forEach((name, i) => ins.category.run(i + 1, name));
    TAG_WORDS.forEach((name, i) => ins.tag.run(i + 1, name));
    ins.tag.run(TAG_WORDS.length + 1, `<tag> & "${HOSTILE.cdataEnd}"`);
    const hostileTag = TAG_WORDS.length + 1;

    // `users` is the total: the fixed characters first, as many of them as fit.
    const total = options.users;
    const videosOf: number[][] = [];
    let videoId = 0;

    for (let i = 0; i < total; i++) {
      const id = i + 1;
      const show = SHOWCASE[i];
      const first = pick(FIRST);
      const last = pick(LAST);
      const username = show?.username ?? `${first.toLowerCase()}${id}`;
      const state = show ? (show.state ?? 'active') : random() < 0.02 ? 'suspended' : 'active';
      const everything = show?.everything ?? false;
      const nothing = show?.nothing ?? false;
      const hostile = show?.hostile ?? false;
      const created = EPOCH + int(0, 200) * DAY + int(0, DAY);
      const shows = (p: number) => (everything ? 1 : nothing ? 0 : random() < p ? 1 : 0);
      const text = (plain: string) => (hostile ? `${plain} ${HOSTILE.markup} ${HOSTILE.entities} ${HOSTILE.controls} ${HOSTILE.bidi}` : plain);
      ins.user.run({
        id,
        username,
        display_name: show?.displayName ?? `${first} ${last}`,
        title: everything ? 'Dr' : hostile ? HOSTILE.quotes : '',
        given_name: text(show ? show.displayName.split(' ')[0]! : first),
        family_name: show ? show.displayName.split(' ').slice(1).join(' ') : last,
        email: nothing ? null : `${hostile ? 'mallory+<x>&"y"' : username.replace(/[^a-z0-9]/gi, '') || `user${id}`}@mail.example.net`,
        show_email: shows(0.1),
        phone: nothing ? null : `+1-555-${String(1000 + (id % 9000)).padStart(4, '0')}`,
        show_phone: shows(0.2),
        homepage_url: nothing ? null : hostile ? HOSTILE.javascriptUrl : `https://home.example.net/~${encodeURIComponent(username)}/`,
        avatar_url: nothing ? null : `${base}/avatars/${id}.jpg`,
        openid_url: everything || hostile ? `https://openid.example.net/${encodeURIComponent(username)}?a=1&b="2"` : null,
        aim: everything || hostile ? text(`${username}aim`) : null,
        yahoo: everything ? `${username}_yahoo` : null,
        msn: everything ? `${username}@msn.example.net` : null,
        icq: everything ? '123456789' : null,
        jabber: everything ? `${username}@jabber.example.net` : null,
        show_chat_ids: shows(0.1),
        street: nothing ? null : text(`${int(1, 999)} ${pick(WORDS)} Street`),
        locality: nothing ? null : pick(['Springfield', 'Lyon', 'Kyoto', 'Lagos', 'Quito']),
        region: nothing ? null : pick(['IL', 'ARA', 'KY', 'LA', 'P']),
        region_name: nothing ? null : pick(['Illinois', 'Auvergne-Rhône-Alpes', 'Kyoto Prefecture', 'Lagos State', 'Pichincha']),
        postal_code: nothing ? null : String(int(10000, 99999)),
        country: nothing ? null : pick(['United States', 'France', 'Japan', 'Nigeria', 'Ecuador']),
        show_address: shows(0.15),
        history_public: everything ? 1 : nothing ? 0 : random() < 0.3 ? 1 : 0,
        state,
        created_at: created,
        updated_at: created + int(0, 100) * DAY,
      });

      const uploads: number[] = [];
      const count = show?.uploads ?? (heavy ? int(...FEED_HEAVY.uploads) : random() < 0.1 ? 0 : random() < 0.05 ? int(21, 30) : int(1, 8));
      for (let k = 0; k < count; k++) {
        const vid = ++videoId;
        const publicId = `v${vid.toString(36).padStart(6, '0')}`;
        const vCreated = created + (k + 1) * int(1, 5) * DAY + int(0, 3600);
        const hostileVideo = hostile && k < 3;
        ins.video.run({
          id: vid,
          public_id: publicId,
          user_id: id,
          title: hostileVideo ? `${HOSTILE.markup} ${HOSTILE.cdataEnd} ${HOSTILE.quotes}` : `${pick(WORDS)} ${pick(WORDS)} #${vid}`,
          description:
            hostileVideo && k === 0
              ? `${HOSTILE.cdataEnd} `.repeat(5000).padEnd(200_000, 'x').slice(0, 200_000)
              : hostileVideo
                ? `${HOSTILE.markup} ${HOSTILE.cdataEnd} ${HOSTILE.entities} ${HOSTILE.controls} ${HOSTILE.bidi} ${HOSTILE.astral}`
                : `A video about ${pick(WORDS)} and ${pick(WORDS)}.`,
          duration: random() < 0.1 ? null : int(5, 3 * 3600),
          file_url: `${base}/files/${publicId}.flv`,
          file_size: random() < 0.1 ? null : int(100_000, 500_000_000),
          file_type: random() < 0.8 ? 'video/x-flv' : 'video/mp4',
          width: 320,
          height: 240,
          thumbnail_url: `${base}/thumbs/${publicId}.jpg`,
          captions_url: random() < 0.3 ? `${base}/captions/${publicId}.srt` : null,
          category_id: random() < 0.1 ? null : int(1, CATEGORIES.length),
          visibility: random() < 0.12 && !(heavy && !show && k < FEED_HEAVY.publicUploads) ? 'private' : 'public',
          created_at: vCreated,
          updated_at: vCreated + int(0, 10) * DAY,
        });
        const tagCount = int(0, 4);
        for (let t = 0; t < tagCount; t++) ins.videoTag.run(vid, int(1, TAG_WORDS.length));
        if (hostileVideo) ins.videoTag.run(vid, hostileTag);
        uploads.push(vid);
      }
      videosOf.push(uploads);
      videoCount += count;
    }

    // Relations, once every user and video exists. Showcase users are linked to the inactive ones
    // on purpose: those links must not show.
    const users = total;
    const anyVideo = () => int(1, videoId);
    for (let id = 1; id <= users; id++) {
      const show = SHOWCASE[id - 1];
      if (show?.nothing) continue;
      const rich = show?.everything ?? false;
      const hostile = show?.hostile ?? false;
      const many = rich ? 3 : 1;
      const friends = rich ? [3, 4, 5, 6, 9] : [];
      if (heavy && !show) {
        const count = int(...FEED_HEAVY.friends);
        for (let f = 0; f < count; f++) friends.push(int(1, users));
      } else {
        // The bound is drawn again at each turn: the demo shape's sequence of draws, which every
        // demo database of a given size and seed depends on.
        for (let f = 0; f < int(0, 4) * many; f++) friends.push(int(1, users));
      }
      for (const friend of friends) if (friend !== id && friend <= users) ins.friend.run(id, friend, EPOCH + int(0, 300) * DAY);
      if (random() < 0.5 || rich || hostile) {
        ins.account.run(id, 'https://www.example.com/', hostile ? HOSTILE.markup : `acct${id}`, `https://www.example.com/people/${encodeURIComponent(hostile ? HOSTILE.quotes : `acct${id}`)}`);
      }
      if (rich) ins.account.run(id, 'https://photos.example.com/', 'alice.photos', 'https://photos.example.com/alice%20l');
      for (let t = 0; t < int(0, 3) * many; t++) ins.interest.run(id, int(1, TAG_WORDS.length));
      if (hostile) ins.interest.run(id, hostileTag);
      if (videoId > 0) {
        const saves = rich ? 12 : heavy && !show ? int(...FEED_HEAVY.saves) : random() < 0.5 ? int(1, 6) : 0;
        for (let s = 0; s < saves; s++) ins.saved.run(id, anyVideo(), s, EPOCH + int(0, 300) * DAY);
        const views = rich ? 15 : int(0, 6);
        for (let h = 0; h < views; h++) ins.history.run(id, anyVideo(), EPOCH + int(0, 300) * DAY + h);
        const sources = rich ? 6 : int(0, 3);
        for (let s = 0; s < sources; s++) ins.source.run(id, anyVideo(), int(1, users), Math.round(random() * 100) / 100, EPOCH + int(0, 300) * DAY);
      }
      const recs = rich ? 11 : hostile ? 2 : heavy && !show ? int(...FEED_HEAVY.recommendations) : int(0, 3);
      for (let r = 0; r < recs; r++) {
        const title = hostile ? `${HOSTILE.markup} ${HOSTILE.cdataEnd}` : `Recommended: ${pick(WORDS)} ${pick(WORDS)}`;
        ins.recommendation.run(id, title, `https://elsewhere.example.com/watch?v=${id}-${r}&t=1`, `https://elsewhere.example.com/thumb/${id}-${r}.jpg`,
          hostile ? HOSTILE.entities : '', random() < 0.8 ? int(5, 4000) : null, r === 1 && rich ? 0 : 1, EPOCH + int(0, 300) * DAY + r);
      }
      if (rich || random() < 0.6) {
        for (let c = 1; c <= CATEGORIES.length; c++) {
          if (rich ? c % 3 !== 0 : random() < 0.4) ins.concept.run(id, c, Math.round(random() * 1000) / 1000, random() < 0.2 ? null : EPOCH + int(0, 300) * DAY);
        }
      }
      const reads = rich ? 7 : hostile ? 2 : int(0, 4);
      for (let r = 0; r < reads; r++) {
        ins.reading.run(id, r === 0 && !rich ? null : int(1, CATEGORIES.length), hostile ? HOSTILE.markup : `${pick(WORDS)} blog`, hostile ? HOSTILE.entities : `Posts about ${pick(WORDS)}`,
          `https://blogs.example.net/${id}/${r}/`, `https://blogs.example.net/${id}/${r}/feed.xml`, r, EPOCH + int(0, 300) * DAY, EPOCH + int(300, 400) * DAY);
      }
    }

    // Groups: some owned by inactive users, one hidden, featured videos that may be private.
    const groups = Math.max(30, Math.floor(users / 4));
    for (let g = 1; g <= groups; g++) {
      // Group 1 is alice's, 2 a suspended user's, 4 mallory's (hostile text).
      const fixed = g === 1 ? 1 : g === 2 ? 3 : g === 4 ? 9 : undefined;
      const owner = fixed !== undefined && fixed <= users ? fixed : int(1, users);
      const hidden = g === 3 ? 1 : 0;
      const created = EPOCH + int(0, 300) * DAY;
      const title = g === 4 ? `${HOSTILE.markup} ${HOSTILE.cdataEnd}` : `${pick(WORDS)} lovers ${g}`;
      ins.group.run(g, `group-${g}`, title, g === 4 ? HOSTILE.entities : `People who like ${pick(WORDS)}.`, owner, videoId > 0 && random() < 0.85 ? anyVideo() : null, hidden, created, created + int(0, 30) * DAY);
      ins.member.run(g, owner, created);
      const members = int(2, 10);
      for (let m = 0; m < members; m++) ins.member.run(g, int(1, users), created + int(0, 60) * DAY);
    }
    // Feed-heavy: every generated user belongs to 20 or more groups, so every Atom feed is full.
    if (heavy) {
      for (let id = SHOWCASE.length + 1; id <= users; id++) {
        // Consecutive groups from a random one: distinct, since there are at least 30.
        const first = int(1, groups);
        const joins = int(...FEED_HEAVY.groups);
        for (let j = 0; j < joins; j++) ins.member.run(((first - 1 + j) % groups) + 1, id, EPOCH + int(0, 300) * DAY);
      }
    }
    // alice belongs to more than 20 groups, including the hidden one and the one a suspended user owns.
    for (let g = 1; g <= Math.min(groups, 30); g++) ins.member.run(g, 1, EPOCH + g * DAY);
    // A new site has no history worth keeping: its first build is a full one (docs/incremental.md).
    db.prepare(`INSERT INTO site_meta (key, value) VALUES ('demo', ?)`).run(JSON.stringify(options));
    db.exec('DELETE FROM change_log');
  })();
  return { users: options.users, videos: videoCount };
}

/**
 * Whether `vidfeeds demo` wrote this database (its `site_meta` row `demo`): a build of the demo
 * may keep the default base URL without a warning. Undefined when it cannot be read: that is the
 * build's to report.
 */
export function isDemoDatabase(file: string): boolean | undefined {
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      // A database of another schema version is reported by the build itself, alone.
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version < 1 || version > SCHEMA_VERSION) return undefined;
      return db.prepare(`SELECT 1 FROM site_meta WHERE key = 'demo'`).get() !== undefined;
    } finally {
      db.close();
    }
  } catch {
    return undefined;
  }
}
