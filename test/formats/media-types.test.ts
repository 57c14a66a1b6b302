import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import { isMediaType } from '../../src/render/media-type.js';
import { allElements, parseHtmlPage } from '../helpers/oembed-consumers.js';
import { checkRssFeed } from '../helpers/feed-validator-rules.js';
import { buildInMemory, createTestDb, insertRow, insertUser, insertVideo, T0, testConfig } from '../helpers/site-fixture.js';
import { feedparser, jing, SCHEMAS } from '../helpers/validators.js';

/**
 * `videos.file_type` is published only when it is a media type (RFC 6838 `type/subtype`, RFC 9110
 * parameters): text of another form is named as a bad value and treated as a missing type is
 * (docs/database.md, "Values of the wrong type"). Read back by feedparser and parse5, not our code.
 */

const FALLBACK = 'application/octet-stream';

/** Stored file_type → what the feeds show. */
const TYPES: ReadonlyArray<[string, string]> = [
  // feedparser gives types in lower case: these are written so.
  ['video/mp4', 'video/mp4'],
  ['video/mp4; codecs="avc1.42e01e, mp4a.40.2"', 'video/mp4; codecs="avc1.42e01e, mp4a.40.2"'],
  ['video/vnd.dlna.mpeg-tts', 'video/vnd.dlna.mpeg-tts'],
  ['video/mp4" onload="x', FALLBACK],
  ['mp4', FALLBACK],
  ['', FALLBACK],
  [' video/mp4', FALLBACK],
  ['video/', FALLBACK],
  ['video/mp4;', FALLBACK],
  ['video/mp4 x', FALLBACK],
  ['vidéo/mp4', FALLBACK],
];

function site() {
  const { db, file } = createTestDb();
  const u = insertUser(db, { username: 'typer' });
  const owner = insertUser(db, { username: 'owner' });
  for (const [i, [type]] of TYPES.entries()) {
    const v = insertVideo(db, u.id, { id: 100 + i, public_id: `t${i}`, file_type: type, created_at: T0 + 1000 - i });
    // Each video featured by a group of the user's, for the Atom enclosures.
    insertRow(db, 'groups', { id: i + 1, slug: `g${i}`, title: `Group ${i}`, owner_id: owner.id, featured_video_id: v.id, created_at: T0 + 1000 - i, updated_at: T0 + 1000 - i });
    insertRow(db, 'group_members', { group_id: i + 1, user_id: u.id, joined_at: T0 });
  }
  return file;
}

describe('a file_type that is not a media type', () => {
  it('is published as application/octet-stream in the RSS enclosure and media:content, and named', () => {
    const { writer, warnings, report } = buildInMemory(site(), { only: new Set(['rss']) });
    expect(report.failed).toEqual([]);
    const body = writer.text('typer/rss/index.rss');
    const feed = feedparser({ rss: body }).rss!;
    expect(feed.bozo).toBe(false);
    // Newest first: the order of TYPES.
    const enclosures = feed.entries.map((e) => (e.links as Array<Record<string, string>>).find((l) => l.rel === 'enclosure')?.type);
    expect(enclosures).toEqual(TYPES.map(([, shown]) => shown));
    const media = feed.entries.map((e) => (e.media_content as Array<Record<string, string>>)[0]!.type);
    expect(media).toEqual(TYPES.map(([, shown]) => shown));
    expect(body).not.toContain('onload');
    expect(checkRssFeed(body).filter((problem) => problem.level === 'error')).toEqual([]);
    for (const [i, [stored, shown]] of TYPES.entries()) {
      const named = warnings.some((w) => w.startsWith(`bad value: videos id=${100 + i}, column file_type: found text ${JSON.stringify(stored)}, expected text (a media type`));
      expect(named, `${JSON.stringify(stored)} named; warnings:\n${warnings.join('\n')}`).toBe(shown === FALLBACK);
    }
    expect(warnings.filter((w) => w.includes('column file_type')).every((w) => w.endsWith(`the field is left out (${FALLBACK} stands in)`))).toBe(true);
  });

  it('is published as application/octet-stream in the Atom enclosure and media:content, a valid Atom document', () => {
    const { writer } = buildInMemory(site(), { only: new Set(['atom']) });
    const body = writer.text('typer/atom/index.atom');
    expect(jing(join(SCHEMAS, 'atom-rfc4287.rnc'), { atom: body })).toEqual({ ok: true, output: '' });
    const feed = feedparser({ atom: body }).atom!;
    expect(feed.bozo).toBe(false);
    const enclosures = feed.entries.map((e) => (e.links as Array<Record<string, string>>).find((l) => l.rel === 'enclosure')?.type);
    expect(enclosures).toEqual(TYPES.map(([, shown]) => shown));
    const media = feed.entries.map((e) => (e.media_content as Array<Record<string, string>>)[0]!.type);
    expect(media).toEqual(TYPES.map(([, shown]) => shown));
  });

  it('gives the html5 embed a <source> without a type, which browsers sniff, as a missing type does', () => {
    const config = testConfig({ player: { ...DEFAULT_CONFIG.player, template: 'html5' } });
    const { writer } = buildInMemory(site(), { only: new Set(['embed']), config });
    for (const [i, [stored, shown]] of TYPES.entries()) {
      const page = parseHtmlPage(writer.text(`t${i}/embed/index.html`));
      const source = allElements(page.body).find((e) => e.tag === 'source')!;
      expect(source.attrs.type, JSON.stringify(stored)).toBe(shown === FALLBACK ? undefined : shown);
    }
  });
});

describe('isMediaType', () => {
  it('takes RFC 6838 names and RFC 9110 parameters, in ASCII', () => {
    for (const type of ['video/x-flv', 'application/vnd.apple.mpegurl', 'video/mp4;codecs=avc1', 'text/plain; charset="a\\"b"', 'a/b ;\tc=d']) {
      expect(isMediaType(type), type).toBe(true);
    }
    const long = 'x'.repeat(127);
    expect(isMediaType(`${long}/${long}`)).toBe(true);
    expect(isMediaType(`${long}x/mp4`)).toBe(false);
    for (const type of ['video', '/mp4', 'video/mp4/x', '-video/mp4', 'video/*', 'video/mp4; codecs', 'video/mp4; a="b', 'video/mp4\n', 'video/mp4; a="é"']) {
      expect(isMediaType(type), type).toBe(false);
    }
  });

  it('takes time linear in the length of what it is given', () => {
    const cases = (n: number) => [`video/mp4${'; a=b'.repeat(n)}`, `video/mp4; a="${'\\"'.repeat(n)}`, `video/${'a'.repeat(n)}`, `${' ;a=b'.repeat(n)}`];
    const time = (n: number) => {
      const start = process.hrtime.bigint();
      for (const text of cases(n)) isMediaType(text);
      return Number(process.hrtime.bigint() - start);
    };
    time(1000);
    // A hundred times the length: well under a hundred squared times the time.
    expect(time(200_000) / Math.max(time(2_000), 1)).toBeLessThan(2_000);
  });
});
