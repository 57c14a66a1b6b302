import Database from 'better-sqlite3';
import jsonld from 'jsonld';
import ogs from 'open-graph-scraper';
import { parse } from 'parse5';
import { describe, expect, it } from 'vitest';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import { FORMATS } from '../../src/formats/registry.js';
import { isoDuration, videoHead } from '../../src/formats/video-head.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { cli } from '../helpers/cli.js';
import { createTestDb, insertUser, insertVideo, testConfig } from '../helpers/site-fixture.js';

/**
 * The head snippet of a video page, read back by consumers that are not ours: Open Graph and the
 * Twitter card by open-graph-scraper (the parser link-preview services built on Node use), the
 * JSON-LD by a browser's HTML parser (parse5) and the jsonld processor, expanded against
 * schema.org's vocabulary, with titles that attack every context the snippet writes.
 */

const HOSTILE = `"><script>alert(1)</script></script><!-- 'q' & &amp; \u2028line\u2029para \u200Fرتل\u202E RTL 🎬`;
const DESCRIPTION = `Desc </SCRIPT > & <b>bold</b> "quoted"\u2028next`;

/**
 * The properties of schema.org's VideoObject the snippet may use: VideoObject's own, and those it
 * inherits from MediaObject, CreativeWork and Thing (https://schema.org/VideoObject), each with the
 * range the snippet's values must fall in.
 */
const VIDEO_OBJECT_PROPERTIES: Record<string, 'Text' | 'URL' | 'DateTime' | 'Duration' | 'Person'> = {
  name: 'Text',
  description: 'Text',
  thumbnailUrl: 'URL',
  uploadDate: 'DateTime',
  duration: 'Duration',
  contentUrl: 'URL',
  embedUrl: 'URL',
  url: 'URL',
  author: 'Person',
};

/** schema.org's JSON-LD context, as https://schema.org/ serves it in essence: every term in its vocabulary. Offline. */
const SCHEMA_CONTEXT = { '@context': { '@vocab': 'https://schema.org/' } };
const documentLoader = async (url: string) => {
  if (url.replace(/\/$/, '') !== 'https://schema.org') throw new Error(`no network in tests: ${url}`);
  return { contextUrl: undefined, documentUrl: url, document: SCHEMA_CONTEXT };
};

function site(baseUrl = 'https://videos.example.org') {
  const { db, file } = createTestDb();
  const user = insertUser(db, { username: 'uploader', display_name: 'Up <Loader> "U"' });
  insertVideo(db, user.id, {
    public_id: 'clip',
    title: HOSTILE,
    description: DESCRIPTION,
    file_url: 'https://cdn.example.org/v/clip.mp4',
    file_type: 'video/mp4; codecs="avc1.42E01E"',
    thumbnail_url: 'https://cdn.example.org/t/clip.jpg',
    thumbnail_width: 320,
    thumbnail_height: 180,
    duration_seconds: 3725,
    created_at: 1_704_067_242,
  });
  insertVideo(db, user.id, { public_id: 'flv', file_type: 'video/x-flv', description: '' });
  insertVideo(db, user.id, { public_id: 'hidden', visibility: 'private' });
  const config = testConfig({ baseUrl });
  const context = createSiteContext(config, FORMATS, new Date());
  const reader = new SiteReader(new Database(file, { readonly: true }), readLimits(config.recommendationsCount));
  const head = (id: string) => {
    const found = reader.videoByPublicId(id);
    if (found.status !== 'published') throw new Error(`${id} is ${found.status}`);
    return videoHead(found.video, context);
  };
  return { head, file };
}

/** The snippet in the `<head>` of a page, as the site prints it. */
const page = (head: string) => `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Video</title>\n${head}</head><body></body></html>`;

interface Node {
  nodeName: string;
  attrs?: Array<{ name: string; value: string }>;
  childNodes?: Node[];
  value?: string;
}

/** The elements of the head a browser's parser sees, and the text of its JSON-LD scripts. */
function headOf(html: string): { elements: Node[]; scripts: string[] } {
  const document = parse(html) as unknown as Node;
  const htmlElement = document.childNodes!.find((n) => n.nodeName === 'html')!;
  const headElement = htmlElement.childNodes!.find((n) => n.nodeName === 'head')!;
  const elements = headElement.childNodes!.filter((n) => !n.nodeName.startsWith('#'));
  const scripts = elements.filter((e) => e.nodeName === 'script').map((e) => e.childNodes!.map((c) => c.value ?? '').join(''));
  // Nothing escaped into the body.
  const body = htmlElement.childNodes!.find((n) => n.nodeName === 'body')!;
  expect(body.childNodes ?? []).toEqual([]);
  return { elements, scripts };
}

describe('the head snippet of a video page', () => {
  it('is read back by open-graph-scraper as the database holds it: Open Graph and the Twitter player card', async () => {
    const { head } = site();
    const { result, error } = await ogs({ html: page(head('clip')) });
    expect(error).toBe(false);
    expect(result).toMatchObject({
      ogType: 'video.other',
      ogTitle: HOSTILE,
      ogDescription: DESCRIPTION,
      ogUrl: 'https://videos.example.org/clip/embed/',
      ogSiteName: 'vidfeeds demo',
      twitterCard: 'player',
      twitterTitle: HOSTILE,
    });
    expect(result.ogImage).toEqual([expect.objectContaining({ url: 'https://cdn.example.org/t/clip.jpg', width: '320', height: '180' })]);
    expect(result.ogVideo).toEqual([
      expect.objectContaining({ url: 'https://videos.example.org/clip/embed/', type: 'text/html', width: '400', height: '300' }),
    ]);
    expect(result.twitterPlayer).toEqual([
      expect.objectContaining({ url: 'https://videos.example.org/clip/embed/', width: '400', height: '300', stream: 'https://cdn.example.org/v/clip.mp4' }),
    ]);
    expect(result.twitterImage).toEqual([expect.objectContaining({ url: 'https://cdn.example.org/t/clip.jpg' })]);
    const snippet = head('clip');
    expect(snippet).toContain('<meta property="og:video:secure_url" content="https://videos.example.org/clip/embed/">');
    expect(snippet).toContain('<meta name="twitter:player:stream:content_type" content="video/mp4">');
  });

  it('leaves out what a video does not have: a stream browsers cannot play, a description, a secure URL on http', async () => {
    const { head } = site('http://videos.example.org');
    const snippet = head('flv');
    expect(snippet).not.toContain('twitter:player:stream');
    expect(snippet).not.toContain('og:description');
    expect(snippet).not.toContain('og:video:secure_url');
    const { result } = await ogs({ html: page(snippet) });
    expect(result.ogVideo).toEqual([expect.objectContaining({ url: 'http://videos.example.org/flv/embed/' })]);
  });

  it('holds a JSON-LD VideoObject that jsonld expands to schema.org properties with their ranges', async () => {
    const { head } = site();
    const { elements, scripts } = headOf(page(head('clip')));
    expect(elements.map((e) => e.nodeName).filter((n) => n !== 'meta' && n !== 'title' && n !== 'link')).toEqual(['script']);
    expect(scripts).toHaveLength(1);
    // No `</script` and no raw line separator can be in the element's text.
    expect(scripts[0]).not.toMatch(/<|>|\u2028|\u2029/);
    const data = JSON.parse(scripts[0]!) as Record<string, unknown>;
    expect(data).toEqual({
      '@context': 'https://schema.org',
      '@type': 'VideoObject',
      name: HOSTILE,
      description: DESCRIPTION,
      thumbnailUrl: 'https://cdn.example.org/t/clip.jpg',
      uploadDate: '2024-01-01T00:00:42Z',
      duration: 'PT1H2M5S',
      contentUrl: 'https://cdn.example.org/v/clip.mp4',
      embedUrl: 'https://videos.example.org/clip/embed/',
      url: 'https://videos.example.org/clip/embed/',
      author: { '@type': 'Person', name: 'Up <Loader> "U"', url: 'https://videos.example.org/uploader/' },
    });
    const [expanded] = (await jsonld.expand(data as jsonld.JsonLdDocument, { documentLoader: documentLoader as never })) as Array<Record<string, unknown>>;
    expect(expanded!['@type']).toEqual(['https://schema.org/VideoObject']);
    const properties = Object.keys(expanded!).filter((k) => k !== '@type');
    expect(properties.sort()).toEqual(Object.keys(VIDEO_OBJECT_PROPERTIES).map((p) => `https://schema.org/${p}`).sort());
    for (const [name, range] of Object.entries(VIDEO_OBJECT_PROPERTIES)) {
      const [value] = expanded![`https://schema.org/${name}`] as Array<Record<string, unknown>>;
      if (range === 'Person') {
        expect(value!['@type']).toEqual(['https://schema.org/Person']);
        continue;
      }
      const text = value!['@value'] as string;
      if (range === 'URL') expect(new URL(text).protocol).toBe('https:');
      if (range === 'DateTime') expect(text).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/);
      if (range === 'Duration') expect(text).toMatch(/^P(?!$)(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?$/);
    }
  });

  it('keeps hostile titles inside every attribute: the head holds only its own elements', () => {
    const { head } = site();
    const snippet = head('clip');
    const { elements } = headOf(page(snippet));
    const names = elements.map((e) => e.nodeName);
    expect(names.filter((n) => n === 'link')).toHaveLength(2);
    expect(names.filter((n) => n === 'script')).toHaveLength(1);
    // meta charset, title, then the snippet's 22 meta elements (13 Open Graph, 9 Twitter) (an mp4 on https, with a description).
    expect(names.filter((n) => n === 'meta')).toHaveLength(1 + 22);
    for (const element of elements.filter((e) => e.nodeName === 'meta' || e.nodeName === 'link')) {
      for (const { name } of element.attrs!) expect(['property', 'name', 'content', 'rel', 'type', 'href', 'charset']).toContain(name);
    }
    const titles = elements.filter((e) => e.attrs?.some((a) => a.value === 'og:title' || a.value === 'twitter:title'));
    expect(titles.map((e) => e.attrs!.find((a) => a.name === 'content')!.value)).toEqual([HOSTILE, HOSTILE]);
  });

  it('writes durations in ISO 8601', () => {
    expect([0, 5, 60, 61, 3600, 3725, 86_400].map(isoDuration)).toEqual(['PT0S', 'PT5S', 'PT1M', 'PT1M1S', 'PT1H', 'PT1H2M5S', 'PT24H']);
  });
});

describe('vidfeeds head', () => {
  it('prints the snippet of each video, and refuses a private or unknown video before printing anything', () => {
    const { file } = site();
    const ok = cli(['head', '--db', file, 'clip', 'flv']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout.match(/<script type="application\/ld\+json">/g)).toHaveLength(2);
    for (const id of ['hidden', 'nope']) {
      const refused = cli(['head', '--db', file, 'clip', id]);
      expect(refused.code).toBe(2);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(`video "${id}"`);
    }
  });
});
