import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import { validateConfig } from '../../src/config/load-config.js';
import { FORMATS } from '../../src/formats/registry.js';
import { allElements, isElement, parseHtml, parseHtmlPage, type HtmlElement } from '../helpers/oembed-consumers.js';
import { buildInMemory, createTestDb, insertUser, insertVideo, testConfig } from '../helpers/site-fixture.js';

/**
 * The embed page (`/<video>/embed/`) as a browser's parser (parse5) reads it: a whole document
 * whose body is the player and a title link, with hostile values kept inside their text and
 * attributes; in the URL table; none for a video that is not published. The Nu HTML checker
 * (test/formats/html-checker.test.ts) and Chromium (test/browser/embed-plays.test.ts) check the
 * same pages.
 */

const HOSTILE = `"><script>alert(1)</script><img src=x onerror=alert(2)> 'q' & &amp; \u2028 \u200Fرتل\u202E 🎬`;

function build(player: Partial<typeof DEFAULT_CONFIG.player> = {}) {
  const { db, file } = createTestDb();
  const user = insertUser(db, { username: 'uploader' });
  insertVideo(db, user.id, { public_id: 'clip', title: HOSTILE, file_type: 'video/webm' });
  insertVideo(db, user.id, { public_id: 'hidden', visibility: 'private' });
  const suspended = insertUser(db, { username: 'gone', state: 'suspended' });
  insertVideo(db, suspended.id, { public_id: 'ofsuspended' });
  const { writer, report } = buildInMemory(file, { config: testConfig({ player: { ...DEFAULT_CONFIG.player, ...player } }), only: new Set(['embed']) });
  expect(report.failed).toEqual([]);
  return writer;
}

const attrsOf = (element: HtmlElement) => element.attrs;

describe('the embed page', () => {
  it('is a whole document: the player and a link to the video page, hostile text kept as text', () => {
    const writer = build();
    const page = parseHtmlPage(writer.text('clip/embed/index.html'));
    expect(page.lang).toBe('en');
    expect(page.title).toBe(`${HOSTILE} – vidfeeds demo`);
    const [player, caption, ...rest] = page.body.filter(isElement);
    expect(rest).toEqual([]);
    expect(player!.tag).toBe('div');
    const video = player!.children.filter(isElement)[0]!;
    expect(video.tag).toBe('video');
    expect(video.attrs.title).toBe(HOSTILE);
    expect(caption!.tag).toBe('p');
    const [link] = caption!.children.filter(isElement);
    expect(attrsOf(link!)).toEqual({ href: 'https://videos.example.org/clip/embed/', target: '_blank', rel: 'noopener' });
    expect(link!.children).toEqual([{ text: HOSTILE }]);
    const tags = new Set(allElements(page.body).map((e) => e.tag));
    expect(tags).toEqual(new Set(['div', 'video', 'source', 'a', 'p']));
  });

  it('holds the seed Flash player when player.template is flash', () => {
    const writer = build({ template: 'flash' });
    const page = parseHtmlPage(writer.text('clip/embed/index.html'));
    expect(allElements(page.body).map((e) => e.tag).slice(0, 2)).toEqual(['div', 'object']);
  });

  it('exists only for published videos', () => {
    const writer = build();
    expect([...writer.files.keys()].sort()).toEqual(['clip/embed/index.html']);
  });

  it('names a video whose title is blank once cleaned by its id, as one whose title is white space', () => {
    const { db, file } = createTestDb();
    const user = insertUser(db, { username: 'uploader' });
    insertVideo(db, user.id, { public_id: 'bell', title: '\u0007\u0008' });
    insertVideo(db, user.id, { public_id: 'space', title: ' \u00A0 ' });
    const config = testConfig({ videoHead: { file: true } });
    const { writer } = buildInMemory(file, { config, only: new Set(['embed', 'head', 'oembed']) });
    for (const id of ['bell', 'space']) {
      const page = parseHtmlPage(writer.text(`${id}/embed/index.html`));
      expect(page.title).toBe(`${id} – vidfeeds demo`);
      const link = allElements(page.body).find((e) => e.tag === 'a' && e.attrs.rel === 'noopener')!;
      expect(link.children).toEqual([{ text: id }]);
      // The frame's accessible name, which WordPress requires of an embed.
      const [iframe] = allElements(parseHtml((JSON.parse(writer.text(`${id}/oembed/index.json`)) as { html: string }).html));
      expect(iframe!.attrs.title).toBe(id);
      const meta = allElements(parseHtml(writer.text(`${id}/embed/head.html`))).filter((e) => e.tag === 'meta');
      expect(meta.find((e) => e.attrs.property === 'og:title')?.attrs.content).toBe(id);
      expect(meta.find((e) => e.attrs.name === 'twitter:title')?.attrs.content).toBe(id);
      const ld = JSON.parse(/<script type="application\/ld\+json">(.*)<\/script>/.exec(writer.text(`${id}/embed/head.html`))![1]!) as { name: string };
      expect(ld.name).toBe(id);
    }
  });

  it('is in the URL table, at /<video>/embed/, served as HTML with frame-ancestors *, out of the sitemap', () => {
    const format = FORMATS.find((f) => f.name === 'embed')!;
    expect(format).toMatchObject({ scope: 'video', dir: 'embed', file: 'index.html', urlName: '', mediaType: 'text/html; charset=utf-8', inSitemap: false });
    expect(format.headers).toEqual({ 'Content-Security-Policy': 'frame-ancestors *' });
  });
});

describe('oembed.html in the configuration', () => {
  it('is iframe by default, takes inline, and refuses anything else naming the setting', () => {
    expect(DEFAULT_CONFIG.oembed.html).toBe('iframe');
    expect(validateConfig({ oembed: { html: 'inline' } }).oembed.html).toBe('inline');
    expect(() => validateConfig({ oembed: { html: 'frame' } })).toThrow('oembed.html must be one of "iframe", "inline", not "frame"');
    expect(() => validateConfig({ oembed: { html: 'iframe', width: 3 } })).toThrow(/oembed/);
  });
});
