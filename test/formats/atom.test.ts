import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { atomDocument, type AtomPage } from '../../src/formats/atom.js';
import type { SiteContext } from '../../src/formats/format.js';
import { FORMATS } from '../../src/formats/registry.js';
import { FH_NS } from '../../src/formats/archive-places.js';
import type { GroupView, UserView } from '../../src/model/views.js';
import { createSiteContext, SAMPLE_VIDEO } from '../../src/pipeline/render/site-context.js';
import { latest, rfc3339 } from '../../src/render/dates.js';
import { htmlText } from '../../src/render/xml-text.js';
import { NS, xmlDocument } from '../../src/render/xml.js';
import type { XmlEngine } from '../../src/render/xml-engine.js';
import { buildInMemory, createDemoDb, createTestDb, insertRow, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';
import { MARKUP_TEXTS as TEXTS, randomChoices, wellFormed } from '../helpers/random-markup.js';
import { feedparser, jing, SCHEMAS, xpath } from '../helpers/validators.js';

/** RFC 4287's Schematron rules, which RELAX NG validators ignore (schemas/README.md). */
function atomRules(doc: string) {
  const entriesWithoutLink = xpath(
    doc,
    'count(//*[local-name()="entry"][not(*[local-name()="content"]) and not(*[local-name()="link"][not(@rel) or @rel="alternate"])])',
  );
  const authorRule = xpath(
    doc,
    'boolean(/*[local-name()="feed"][*[local-name()="author"] or not(*[local-name()="entry"][not(*[local-name()="author"]) and not(*[local-name()="source"]/*[local-name()="author"])])])',
  );
  return { entriesWithoutLink, authorRule };
}

describe('Atom feed of groups', () => {
  it('lists the 20 most recent visible groups with the corrected seed fields', () => {
    const { db, file } = createTestDb();
    const member = insertUser(db, { username: 'member', updated_at: T0 });
    const owner = insertUser(db, { username: 'owner', display_name: 'The Owner', email: 'owner@example.net' });
    const suspended = insertUser(db, { username: 'gone', state: 'suspended' });
    const featured = insertVideo(db, owner.id, { public_id: 'feat', file_size: 4242, duration_seconds: 61 });
    const privateVideo = insertVideo(db, owner.id, { public_id: 'priv', visibility: 'private' });
    for (let g = 1; g <= 23; g++) {
      insertRow(db, 'groups', {
        id: g, slug: `g${g}`, title: `Group ${g}`, owner_id: owner.id, created_at: T0 + g * 100, updated_at: T0 + g * 100 + 5,
        featured_video_id: g === 23 ? featured.id : g === 22 ? privateVideo.id : null,
      });
      insertRow(db, 'group_members', { group_id: g, user_id: member.id, joined_at: T0 });
    }
    insertRow(db, 'groups', { id: 50, slug: 'hidden', title: 'Hidden group', owner_id: owner.id, hidden: 1, created_at: T0 + 99_000, updated_at: T0 + 99_000 });
    insertRow(db, 'groups', { id: 51, slug: 'orphan', title: 'Group of a suspended owner', owner_id: suspended.id, created_at: T0 + 99_000, updated_at: T0 + 99_000 });
    insertRow(db, 'group_members', { group_id: 50, user_id: member.id, joined_at: T0 });
    insertRow(db, 'group_members', { group_id: 51, user_id: member.id, joined_at: T0 });

    const { writer } = buildInMemory(file, { only: new Set(['atom']) });
    const body = writer.text('member/atom/index.atom');
    expect(jing(join(SCHEMAS, 'atom-rfc4287.rnc'), { atom: body })).toEqual({ ok: true, output: '' });
    expect(atomRules(body)).toEqual({ entriesWithoutLink: '0', authorRule: 'true' });

    const feed = feedparser({ atom: body }).atom!;
    expect(feed.bozo).toBe(false);
    expect(feed.entries.map((e) => e.title)).toEqual(Array.from({ length: 20 }, (_, i) => `Group ${23 - i}`));
    expect(body).not.toContain('Hidden group');
    expect(body).not.toContain('suspended owner');
    expect(body).not.toContain('owner@example.net');
    const first = feed.entries[0]!;
    expect(first.updated).toBe('2024-01-01T00:38:25Z');
    expect(first.published).toBe('2024-01-01T00:38:20Z');
    expect(first.author_detail).toMatchObject({ name: 'The Owner', href: 'https://videos.example.org/owner/' });
    const links = first.links as Array<Record<string, string>>;
    expect(links.find((l) => l.rel === 'alternate')?.href).toBe('https://videos.example.org/groups/g23/');
    expect(links.find((l) => l.rel === 'enclosure')).toMatchObject({ length: '4242', type: 'video/x-flv', href: `https://cdn.example.org/v/${featured.id}.flv` });
    // The private featured video gives no enclosure.
    expect((feed.entries[1]!.links as Array<Record<string, string>>).some((l) => l.rel === 'enclosure')).toBe(false);
    expect(feed.feed.updated).toBe('2024-01-01T00:38:25Z');
    const self = (feed.feed.links as Array<Record<string, string>>).find((l) => l.rel === 'self');
    expect(self).toMatchObject({ href: 'https://videos.example.org/member/atom/', type: 'application/atom+xml' });
    expect(feed.feed.generator_detail).toMatchObject({ version: '0.1.0' });
  });

  it('never writes a blank title or name: a group blank once XML can carry it is titled by its slug', () => {
    const { db, file } = createTestDb();
    // U+0007 is removed (XML 1.0 cannot carry it), which leaves nothing.
    const member = insertUser(db, { username: 'member', display_name: '\u0007' });
    const owner = insertUser(db, { username: 'owner', display_name: ' \u0001' });
    const featured = insertVideo(db, owner.id, { public_id: 'feat', title: '\u0007' });
    for (const [g, title] of ['\u0007', ' ', 'Named'].entries()) {
      insertRow(db, 'groups', { id: g + 1, slug: `g${g}`, title, owner_id: owner.id, featured_video_id: featured.id, created_at: T0 + g, updated_at: T0 + g });
      insertRow(db, 'group_members', { group_id: g + 1, user_id: member.id, joined_at: T0 });
    }
    const { writer } = buildInMemory(file, { only: new Set(['atom']) });
    const body = writer.text('member/atom/index.atom');
    expect(jing(join(SCHEMAS, 'atom-rfc4287.rnc'), { atom: body })).toEqual({ ok: true, output: '' });
    const feed = feedparser({ atom: body }).atom!;
    expect(feed.bozo).toBe(false);
    expect(feed.entries.map((e) => e.title)).toEqual(['Named', 'g1', 'g0']);
    expect(feed.entries.map((e) => (e.author_detail as { name: string }).name)).toEqual(['owner', 'owner', 'owner']);
    expect((feed.feed.author_detail as { name: string }).name).toBe('member');
    // The W3C validator refuses an empty text construct, person name or link title.
    expect(body).not.toMatch(/<(title|name)( type="text")?\/>|<(title|name)( type="text")?><\/|title=""/);
  });

  it('gives a user with no groups a valid feed', () => {
    const { db, file } = createTestDb();
    insertUser(db, { username: 'loner' });
    const body = buildInMemory(file, { only: new Set(['atom']) }).writer.text('loner/atom/index.atom');
    expect(jing(join(SCHEMAS, 'atom-rfc4287.rnc'), { atom: body }).ok).toBe(true);
    expect(atomRules(body).authorRule).toBe('true');
  });

  it('validates every demo feed, hostile text included', () => {
    const f = createDemoDb();
    const { writer } = buildInMemory(f.file, { only: new Set(['atom']) });
    const feeds = Object.fromEntries([...writer.files].map(([path, body]) => [path, body.toString('utf8')]));
    expect(Object.keys(feeds).length).toBeGreaterThan(30);
    expect(jing(join(SCHEMAS, 'atom-rfc4287.rnc'), feeds)).toEqual({ ok: true, output: '' });
    const parsed = feedparser(feeds);
    for (const [path, feed] of Object.entries(parsed)) expect(feed.bozo, `${path}: ${feed.bozo_exception}`).toBe(false);
    expect(parsed['alice/atom/index.atom']!.entries).toHaveLength(20);
    const hostile = Object.values(parsed).flatMap((feed) => feed.entries.map((e) => e.title as string)).find((t) => t.includes(']]>'));
    expect(hostile).toContain('<script>alert("x")</script>');
    // Entry ids are unique across every feed (readers key entries by id across feeds), valid tag
    // URIs (RFC 4151), and the same on the next build.
    const ids = Object.values(parsed).flatMap((feed) => feed.entries.map((e) => e.id as string));
    const groups = Object.values(parsed).flatMap((feed) => feed.entries.map((e) => e.link as string));
    expect(new Set(groups).size).toBeLessThan(groups.length);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^tag:videos\.example\.org,\d{4}:\/users\/[^/]+\/groups\/[^/]+$/);
    const again = buildInMemory(f.file, { only: new Set(['atom']) }).writer;
    for (const [path, body] of Object.entries(feeds)) expect(again.text(path)).toBe(body);
  });
});

/**
 * atom.ts writes the feed as markup (for speed). It used to make it with xmlDocument's calls, which
 * stay here as the oracle: the two must agree to the byte on any feed or archive page, hostile
 * text, missing values and odd configuration included; every eighth document also with what
 * xmlbuilder2 itself writes of those calls.
 */
function oracle(user: UserView, groups: readonly GroupView[], site: SiteContext, page: AtomPage, engine: XmlEngine = 'fast'): string {
  // Blank once XML can carry it: nothing left but white space once the characters XML 1.0 forbids are gone.
  const blank = (text: string) => text.replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '').trim() === '';
  const host = new URL(site.paths.base).hostname;
  const tagUri = (date: Date, specific: string) => `tag:${host},${date.getUTCFullYear()}:${site.paths.basePath}/${specific}`;
  const attrs = { xmlns: NS.atom, 'xmlns:media': NS.media, ...(page.archive ? { 'xmlns:fh': FH_NS } : {}), 'xml:lang': site.config.language };
  return xmlDocument('feed', attrs, (feed) => {
    const name = page.archive || blank(user.displayName) ? user.username : user.displayName;
    const updated = latest(groups.map((g) => g.updatedAt), page.archive ? user.createdAt : user.updatedAt);
    feed
      .leaf('title', `${site.config.siteName}: groups of ${name}`, { type: 'text' })
      .leaf('subtitle', `The groups ${htmlText(user.username)} belongs to on ${htmlText(site.config.siteName)}.`, { type: 'html' })
      .leaf('updated', rfc3339(updated))
      .leaf('id', tagUri(user.createdAt, `users/${encodeURIComponent(user.username)}/groups`));
    feed.el('link', { rel: 'alternate', type: 'text/html', hreflang: site.config.language, href: site.paths.userPage(user.username) });
    feed.el('link', { rel: 'self', type: 'application/atom+xml', href: page.self });
    if (!page.archive) for (const hub of site.config.websub.hubs) feed.el('link', { rel: 'hub', href: hub });
    for (const link of page.links) feed.el('link', link);
    if (page.archive) feed.el('fh:archive');
    feed.el('author').leaf('name', name).leaf('uri', site.paths.userPage(user.username));
    feed.leaf('rights', site.config.copyright);
    feed.leaf('generator', site.generator.name, { uri: site.generator.uri, version: site.generator.version });
    for (const group of groups) {
      const entry = feed.el('entry');
      const groupPage = site.paths.groupPage(group.slug);
      entry.leaf('title', [group.title, group.slug].find((title) => !blank(title)) ?? groupPage, { type: 'text' });
      entry.el('link', { rel: 'alternate', type: 'text/html', href: groupPage });
      const featured = group.featuredVideo;
      if (featured !== null) {
        entry.el('link', { rel: 'enclosure', type: featured.fileType, length: featured.fileSize, href: featured.fileUrl, title: blank(featured.title) ? null : featured.title });
      }
      entry
        .leaf('id', tagUri(group.createdAt, `users/${encodeURIComponent(user.username)}/groups/${encodeURIComponent(group.slug)}`))
        .leaf('updated', rfc3339(group.updatedAt))
        .leaf('published', rfc3339(group.createdAt));
      entry.el('author').leaf('name', blank(group.owner.displayName) ? group.owner.username : group.owner.displayName).leaf('uri', site.paths.userPage(group.owner.username));
      if (group.description !== '') entry.leaf('summary', group.description, { type: 'text' });
      if (featured !== null) {
        entry.el('media:content', { url: featured.fileUrl, type: featured.fileType, medium: 'video', fileSize: featured.fileSize, duration: featured.durationSeconds });
        entry.el('media:thumbnail', { url: featured.thumbnailUrl, width: featured.thumbnailWidth, height: featured.thumbnailHeight });
      }
    }
  }, { engine });
}

describe('Atom written as markup', () => {
  it('is byte for byte the document xmlDocument makes of the same calls, on 400 random feeds and archive pages', () => {
    const { random, pick, maybe } = randomChoices(11);
    const date = () => new Date(Math.floor(random() * 4e12));
    const sites = [
      createSiteContext(testConfig(), FORMATS, new Date(0)),
      createSiteContext(
        testConfig({ siteName: 'Site <&> "q" &amp;', copyright: '<c> & "d" ]]>', language: 'pt-BR', websub: { ...testConfig().websub, hubs: ['https://hub.example.org/?a=1&b="2"', 'https://h2.example.org/'] } }),
        FORMATS,
        new Date(0),
      ),
      createSiteContext(testConfig({ baseUrl: 'https://other.example.net/sub', copyright: '' }), FORMATS, new Date(0)),
    ];
    for (let n = 0; n < 400; n++) {
      const site = sites[n % sites.length]!;
      const groups: GroupView[] = Array.from({ length: Math.floor(random() * 4) }, (_, i) => ({
        id: i + 1,
        slug: wellFormed(`${pick(TEXTS)}${pick(['', i])}`),
        title: pick(TEXTS),
        description: pick(TEXTS),
        owner: { username: wellFormed(pick(TEXTS)) || 'owner', displayName: pick(TEXTS) },
        featuredVideo:
          random() < 0.3
            ? null
            : {
                ...SAMPLE_VIDEO,
                title: pick(TEXTS),
                fileUrl: pick(['https://example.org/f.flv', 'https://example.org/f?a=1&b=<2>"', '']),
                fileType: pick(TEXTS),
                fileSize: maybe(Math.floor(random() * 1e9)),
                durationSeconds: maybe(Math.floor(random() * 1e4)),
                thumbnailUrl: pick(['https://example.org/t.jpg', 'https://example.org/t?x="1"&y=<2>']),
                thumbnailWidth: pick([0, 120, 1e21]),
              },
        createdAt: date(),
        updatedAt: date(),
      }));
      const user = { username: wellFormed(pick(TEXTS)) || 'someone', displayName: pick(TEXTS), createdAt: date(), updatedAt: date() } as UserView;
      const archive = random() < 0.4;
      const links = archive
        ? [{ rel: 'current', href: 'https://example.org/u/atom/' }, { rel: pick(['next-archive', 'prev-archive']), href: pick(TEXTS) }]
        : random() < 0.5 ? [] : [{ rel: 'prev-archive', href: 'https://example.org/u/atom/archive/3/?x=1&y="2"' }];
      const page = { self: pick(['https://example.org/u/atom/', 'https://example.org/a?b=1&c=<2>']), links, archive };
      const markup = atomDocument(user, groups, site, page);
      expect(markup, `feed ${n}`).toBe(oracle(user, groups, site, page));
      if (n % 8 === 0) expect(markup, `feed ${n}, builder`).toBe(oracle(user, groups, site, page, 'builder'));
    }
  });
});
