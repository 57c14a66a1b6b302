import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HOSTILE_TEXT, PRIVATE_STRINGS, buildProfiles } from '../helpers/profile-fixture.js';
import { buildInMemory, createDemoDb } from '../helpers/site-fixture.js';
import { jing, listparser, SCHEMAS, xpath } from '../helpers/validators.js';

const ONLY = new Set(['opml']);
const RNC = join(SCHEMAS, 'opml-2.0-spec.rnc');
const BASE = 'https://videos.example.org';
const RFC822 = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

const build = () => buildProfiles(ONLY);

function valid(documents: Record<string, string>): void {
  const result = jing(RNC, documents);
  expect(result.ok, result.output).toBe(true);
}

describe('OPML reading list (/<user>/opml/)', () => {
  it('groups the feeds by category, valid against the OPML 2.0 grammar and read by listparser', () => {
    const body = build().text('alice/opml/index.opml');
    valid({ alice: body });
    const list = listparser({ alice: body }).alice!;
    expect(list.bozo, String(list.bozo_exception)).toBe(false);
    expect(list.feeds.map((f) => [f.title, f.url, f.categories])).toEqual([
      ['Jazz notes', 'https://blogs.example.net/1/feed.xml', [['Music']]],
      ['Guitar weekly', 'https://blogs.example.net/2/feed.xml', [['Music']]],
      ['World news', 'https://blogs.example.net/3/feed.xml', [['News']]],
      ['Loose feed', 'https://blogs.example.net/4/feed.xml', []],
    ]);
    expect(list.meta).toMatchObject({
      title: 'Reading list of Alice Liddell on vidfeeds demo',
      created: 'Tue, 02 Jan 2024 00:00:00 GMT',
      // The newest published entry's change (the left-out script feed is newer and does not count).
      modified: 'Mon, 15 Jan 2024 00:00:00 GMT',
      author: { name: 'Alice Liddell', email: 'alice@mail.example.net', url: `${BASE}/alice/` },
    });
    // Every attribute of seed 2.7 on a feed outline.
    const feed = "//outline[@xmlUrl='https://blogs.example.net/1/feed.xml']";
    expect(xpath(body, `string(${feed}/@type)`)).toBe('rss');
    expect(xpath(body, `string(${feed}/@text)`)).toBe('Jazz notes');
    expect(xpath(body, `string(${feed}/@title)`)).toBe('Jazz notes');
    expect(xpath(body, `string(${feed}/@description)`)).toBe('About Jazz notes');
    expect(xpath(body, `string(${feed}/@htmlUrl)`)).toBe('https://blogs.example.net/1/');
    expect(xpath(body, `string(${feed}/../@text)`)).toBe('Music');
    // A javascript: page URL is left out; a javascript: feed URL leaves the entry out.
    expect(xpath(body, "count(//outline[@title='Guitar weekly']/@htmlUrl)")).toBe('0');
    for (const text of PRIVATE_STRINGS) expect(body, text).not.toContain(text);
  });

  it('writes the head of seed 2.7 as OPML 2.0 has it: RFC 822 dates, ownerId, atom:link rel=self', () => {
    const body = build().text('alice/opml/index.opml');
    expect(xpath(body, 'string(/opml/@version)')).toBe('2.0');
    expect(xpath(body, 'string(/opml/head/docs)')).toBe('http://opml.org/spec2.opml');
    expect(xpath(body, 'string(/opml/head/dateCreated)')).toMatch(RFC822);
    expect(xpath(body, 'string(/opml/head/dateModified)')).toMatch(RFC822);
    expect(xpath(body, 'string(/opml/head/ownerId)')).toBe(`${BASE}/alice/`);
    expect(xpath(body, "string(/opml/head/*[local-name()='link' and namespace-uri()='http://www.w3.org/2005/Atom' and @rel='self']/@href)")).toBe(
      `${BASE}/alice/opml/`,
    );
    expect(xpath(body, 'count(/opml/head/link)')).toBe('0');
  });

  it('serves a user with an empty reading list one comment outline: valid, and no feed to import', () => {
    const body = build().text('nobody/opml/index.opml');
    valid({ nobody: body });
    expect(xpath(body, 'count(/opml/body/outline)')).toBe('1');
    expect(xpath(body, 'string(/opml/body/outline/@isComment)')).toBe('true');
    expect(xpath(body, 'string(/opml/body/outline/@text)')).toBe('nobody has no feeds in the reading list yet.');
    const list = listparser({ nobody: body }).nobody!;
    expect(list.bozo).toBe(false);
    expect(list.feeds).toEqual([]);
    expect(xpath(body, 'count(/opml/head/ownerEmail)')).toBe('0');
    expect(xpath(body, 'string(/opml/head/dateCreated)')).toBe('Mon, 01 Jan 2024 00:00:05 GMT');
  });

  it('keeps hostile text escaped and readable', () => {
    const body = build().text('mallory/opml/index.opml');
    valid({ mallory: body });
    const list = listparser({ mallory: body }).mallory!;
    expect(list.bozo).toBe(false);
    expect(list.feeds).toHaveLength(1);
    expect(HOSTILE_TEXT).toContain('<script>');
    expect(list.feeds[0]!.title).toContain('<script>alert("x")</script>');
    expect(list.feeds[0]!.title).toContain('ends ]]> here');
    expect(list.feeds[0]!.title).toContain('🎬😀𝕏');
    expect(list.feeds[0]!.categories).toEqual([['Film & Animation']]);
  });

  it('validates and reads for every user of the demo site', () => {
    const { file } = createDemoDb();
    const { writer } = buildInMemory(file, { only: ONLY });
    const docs = Object.fromEntries([...writer.files].map(([path, body]) => [path, body.toString('utf8')]));
    expect(Object.keys(docs).length).toBeGreaterThan(30);
    valid(docs);
    for (const [path, list] of Object.entries(listparser(docs))) expect(list.bozo, `${path}: ${list.bozo_exception}`).toBe(false);
  });

  it('matches the reference document', async () => {
    await expect(build().text('alice/opml/index.opml')).toMatchFileSnapshot('__snapshots__/opml-alice.opml');
  });
});
