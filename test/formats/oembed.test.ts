import { readFileSync } from 'node:fs';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import type { SiteConfig } from '../../src/config/site-config.js';
import { FORMATS } from '../../src/formats/registry.js';
import { buildInMemory, createDemoDb, createTestDb, insertUser, insertVideo, testConfig } from '../helpers/site-fixture.js';
import {
  allElements,
  isElement,
  OEMBED_RNC,
  oembedJsonErrors,
  parseFlashvars,
  parseHtml,
  parseOembedXml,
  type HtmlElement,
} from '../helpers/oembed-consumers.js';
import { jing, SCHEMAS } from '../helpers/validators.js';

const OEMBED_FORMATS = new Set(['oembed', 'oembed-json', 'oembed-xml', 'oembed-html']);
const WITH_EMBED_PAGE = new Set([...OEMBED_FORMATS, 'embed']);

function fixture() {
  const f = createTestDb();
  return f;
}

function demo() {
  const f = createDemoDb();
  return f;
}

/** The documents of one kind, by path: `index.json`, `json`, `xml` or `html`. */
function documentsOf(files: Map<string, Buffer>, file: string): Record<string, string> {
  return Object.fromEntries([...files].filter(([path]) => path.endsWith(`/oembed/${file}`)).map(([path, body]) => [path, body.toString('utf8')]));
}

/**
 * A player configuration where every flashvar has a value, the statistics URL with a query. The
 * `html` field is the template's markup (`oembed.html: "inline"`) unless `html` says otherwise.
 */
function playerConfig(overrides: Partial<SiteConfig['player']> = {}, html: SiteConfig['oembed']['html'] = 'inline'): SiteConfig {
  return testConfig({
    oembed: { html },
    player: {
      ...DEFAULT_CONFIG.player,
      playerUrl: 'https://videos.example.org/static/player.swf',
      logoUrl: 'https://videos.example.org/static/watermark.png',
      statsCallbackUrl: 'https://stats.example.org/hit?site=1&kind=embed',
      ...overrides,
    },
  });
}

/** The seed's flashvars (section 2.2), in its order; `width` on the embed fallback only. */
const SEED_FLASHVARS = ['file', 'image', 'captions', 'recommendations', 'callback', 'location', 'logo', 'linkfromdisplay', 'link', 'linktarget', 'backcolor', 'frontcolor', 'lightcolor'];
const SEED_FLASHVARS_EMBED = ['file', 'image', 'width', ...SEED_FLASHVARS.slice(2)];

function onlyElement(nodes: ReturnType<typeof parseHtml>): HtmlElement {
  const elements = nodes.filter(isElement);
  expect(elements).toHaveLength(1);
  expect(nodes.filter((n) => !isElement(n) && n.text.trim() !== '')).toEqual([]);
  return elements[0]!;
}

describe('oEmbed documents of a demo build', () => {
  it('validate: JSON against the oEmbed 1.0 JSON Schema (Ajv), XML against the RELAX NG schema (jing)', () => {
    const { file } = demo();
    const { writer, report } = buildInMemory(file, { only: OEMBED_FORMATS });
    expect(report.failed).toEqual([]);
    const json = { ...documentsOf(writer.files, 'index.json'), ...documentsOf(writer.files, 'json') };
    const xml = documentsOf(writer.files, 'xml');
    expect(Object.keys(xml).length).toBeGreaterThan(100);
    expect(Object.keys(json)).toHaveLength(2 * Object.keys(xml).length);
    expect(oembedJsonErrors(json)).toEqual({});
    const result = jing(OEMBED_RNC, xml);
    expect(result.output).toBe('');
    expect(result.ok).toBe(true);
  });

  it('uses validators that reject what oEmbed 1.0 forbids (the invalid samples)', () => {
    const sample = (name: string) => readFileSync(join(SCHEMAS, 'samples', name), 'utf8');
    const errors = oembedJsonErrors({
      strings: sample('invalid-oembed-string-dimensions.json'),
      partial: sample('invalid-oembed-partial-thumbnail.json'),
      valid: sample('valid-oembed-video.json'),
    });
    expect(Object.keys(errors).sort()).toEqual(['partial', 'strings']);
    expect(jing(OEMBED_RNC, { bad: sample('invalid-oembed.xml') }).ok).toBe(false);
  });

  it('agree on every field in all four forms', () => {
    const { file } = demo();
    const { writer } = buildInMemory(file, { only: OEMBED_FORMATS });
    const defaults = documentsOf(writer.files, 'index.json');
    const xml = parseOembedXml(documentsOf(writer.files, 'xml'));
    let compared = 0;
    for (const [path, body] of Object.entries(defaults)) {
      const dir = path.slice(0, -'index.json'.length);
      expect(writer.text(`${dir}json`), dir).toBe(body);
      const json = JSON.parse(body) as Record<string, unknown>;
      for (const name of ['width', 'height', 'thumbnail_width', 'thumbnail_height']) expect(typeof json[name], `${dir} ${name}`).toBe('number');
      const parsedXml = xml[`${dir}xml`]!;
      expect(parsedXml.root).toBe('oembed');
      expect(parsedXml.fields).toEqual(Object.entries(json).map(([name, value]) => [name, String(value)]));
      // The HTML form is the bare markup, byte for byte the html field: no document, no style sheet.
      expect(writer.text(`${dir}html`), dir).toBe(json.html);
      compared++;
    }
    expect(compared).toBeGreaterThan(100);
  });

  it('give no file to a private video or to a video of a suspended or deleted user', () => {
    const { db, file } = demo();
    const hidden = db
      .prepare<[], { public_id: string }>(`SELECT v.public_id FROM videos v JOIN users u ON u.id = v.user_id WHERE v.visibility <> 'public' OR u.state <> 'active'`)
      .all()
      .map((r) => r.public_id);
    const carolAndDave = db
      .prepare<[], { n: number }>(`SELECT count(*) AS n FROM videos v JOIN users u ON u.id = v.user_id WHERE u.username IN ('carol', 'dave')`)
      .get()!.n;
    expect(carolAndDave).toBe(7);
    expect(hidden.length).toBeGreaterThan(carolAndDave);
    const { writer } = buildInMemory(file, { only: OEMBED_FORMATS });
    const dirs = new Set([...writer.files.keys()].map((path) => path.split('/')[0]));
    for (const id of hidden) expect(dirs.has(id), id).toBe(false);
  });

  it('keep the hostile titles of the demo inside their attributes', () => {
    const { db, file } = demo();
    const published = db
      .prepare<[], { n: number }>(`SELECT count(*) AS n FROM videos WHERE title LIKE '%<script>%' AND visibility = 'public'`)
      .get()!.n;
    expect(published).toBeGreaterThan(0);
    const { writer } = buildInMemory(file, { only: new Set(['oembed', 'oembed-html']) });
    const hostile = Object.entries(documentsOf(writer.files, 'index.json'))
      .filter(([, body]) => (JSON.parse(body) as { title: string }).title.includes('<script>'))
      .map(([path]) => [path.replace(/index\.json$/, 'html'), writer.text(path.replace(/index\.json$/, 'html'))] as const);
    expect(hostile).toHaveLength(published);
    for (const [path, html] of hostile) {
      const json = JSON.parse(writer.text(path.replace(/html$/, 'index.json'))) as { title: string };
      // The default html: one iframe of the embed page, the title inside its attribute.
      const iframe = onlyElement(parseHtml(html));
      expect(iframe.tag).toBe('iframe');
      expect(iframe.children).toEqual([]);
      expect(iframe.attrs.title).toBe(json.title);
      expect(iframe.attrs.src).toBe(`https://videos.example.org/${encodeURIComponent(path.split('/')[0]!)}/embed/`);
    }
  });
});

describe('oEmbed response of one video', () => {
  function oneVideo(config: SiteConfig, fields: Record<string, unknown> = {}, userFields: Record<string, unknown> = {}, only = OEMBED_FORMATS) {
    const { db, file } = fixture();
    const user = insertUser(db, { username: 'uploader', ...userFields });
    const video = insertVideo(db, user.id, {
      public_id: 'clip1',
      title: 'A clip',
      captions_url: 'https://cdn.example.org/c/clip1.srt',
      thumbnail_width: 160,
      thumbnail_height: 120,
      file_type: 'video/mp4',
      ...fields,
    });
    const built = buildInMemory(file, { config, only });
    expect(built.report.failed).toEqual([]);
    return { ...built, id: video.id, publicId: video.publicId, username: user.username };
  }

  it('carries every field of seed 2.2 as oEmbed 1.0 names and types them', () => {
    const { writer, id } = oneVideo(playerConfig());
    const json = JSON.parse(writer.text('clip1/oembed/index.json')) as Record<string, unknown>;
    expect(Object.keys(json)).toEqual([
      'version', 'type', 'width', 'height', 'title', 'thumbnail_url', 'thumbnail_width', 'thumbnail_height',
      'web_page', 'author_name', 'author_url', 'provider_name', 'provider_url', 'html',
    ]);
    expect(json).toMatchObject({
      version: '1.0',
      type: 'video',
      width: 400,
      height: 300,
      title: 'A clip',
      thumbnail_url: `https://cdn.example.org/t/${id}.jpg`,
      thumbnail_width: 160,
      thumbnail_height: 120,
      web_page: 'https://videos.example.org/clip1/embed/',
      author_name: 'uploader',
      author_url: 'https://videos.example.org/uploader/',
      provider_name: 'vidfeeds demo',
      provider_url: 'https://videos.example.org/',
    });
  });

  it('renders the seed Flash object with its embed fallback, params and every flashvar', () => {
    const { writer, id } = oneVideo(playerConfig({ template: 'flash' }));
    const object = onlyElement(parseHtml(writer.text('clip1/oembed/html')));
    const player = 'https://videos.example.org/static/player.swf';
    expect(object.tag).toBe('object');
    expect(object.attrs).toEqual({
      width: '400',
      height: '300',
      type: 'application/x-shockwave-flash',
      data: player,
      allowfullscreen: 'true',
      allowscriptaccess: 'sameDomain',
      bgcolor: '#000000',
      title: 'A clip',
    });
    const children = object.children.filter(isElement);
    expect(children.map((c) => c.tag)).toEqual(['param', 'param', 'param', 'param', 'param', 'embed']);
    const params = Object.fromEntries(children.filter((c) => c.tag === 'param').map((p) => [p.attrs.name, p.attrs.value]));
    expect(Object.keys(params)).toEqual(['movie', 'allowfullscreen', 'allowscriptaccess', 'bgcolor', 'flashvars']);
    expect(params).toMatchObject({ movie: player, allowfullscreen: 'true', allowscriptaccess: 'sameDomain', bgcolor: '#000000' });

    const expected: Record<string, string> = {
      file: `https://cdn.example.org/v/${id}.flv`,
      image: `https://cdn.example.org/t/${id}.jpg`,
      captions: 'https://cdn.example.org/c/clip1.srt',
      recommendations: 'https://videos.example.org/uploader/openrecommender/',
      callback: 'https://stats.example.org/hit?site=1&kind=embed',
      location: player,
      logo: 'https://videos.example.org/static/watermark.png',
      linkfromdisplay: 'true',
      link: 'https://videos.example.org/clip1/embed/',
      linktarget: '_blank',
      backcolor: '0x000000',
      frontcolor: '0xCCCCCC',
      lightcolor: '0x557722',
    };
    const flashvars = parseFlashvars(params.flashvars!);
    expect(flashvars.map(([name]) => name)).toEqual(SEED_FLASHVARS);
    expect(Object.fromEntries(flashvars)).toEqual(expected);
    // Values are URL-encoded: the statistics URL's own `&` and `=` do not split the list.
    expect(params.flashvars).toContain('callback=https%3A%2F%2Fstats.example.org%2Fhit%3Fsite%3D1%26kind%3Dembed&');
    for (const name of ['backcolor', 'frontcolor', 'lightcolor']) expect(Object.fromEntries(flashvars)[name]).toMatch(/^0x[0-9A-Fa-f]{6}$/);

    const embed = children[5]!;
    expect(embed.children).toEqual([]);
    const { flashvars: embedFlashvars, ...embedAttrs } = embed.attrs;
    expect(embedAttrs).toEqual({
      src: player,
      width: '400',
      height: '300',
      type: 'application/x-shockwave-flash',
      allowfullscreen: 'true',
      allowscriptaccess: 'sameDomain',
      bgcolor: '#000000',
      title: 'A clip',
    });
    const embedVars = parseFlashvars(embedFlashvars!);
    expect(embedVars.map(([name]) => name)).toEqual(SEED_FLASHVARS_EMBED);
    expect(Object.fromEntries(embedVars)).toEqual({ ...expected, width: '400' });
  });

  it('writes every flashvar name even when a value is empty (no captions, logo or callback)', () => {
    const { writer } = oneVideo(playerConfig({ template: 'flash', logoUrl: '', statsCallbackUrl: '', linkFromDisplay: false }), { captions_url: null });
    const object = onlyElement(parseHtml(writer.text('clip1/oembed/html')));
    const flashvars = Object.fromEntries(parseFlashvars(object.children.filter(isElement).find((c) => c.attrs.name === 'flashvars')!.attrs.value!));
    expect(Object.keys(flashvars)).toEqual(SEED_FLASHVARS);
    expect(flashvars).toMatchObject({ captions: '', logo: '', callback: '', linkfromdisplay: 'false' });
  });

  it('keeps hostile titles, ids, names and URLs inside their attributes in every form and template', () => {
    const title = `"><script>alert(1)</script><img src=x onerror=alert(2)> 'single' \`back\` & &amp; &#65; ]]> bell\u0007 cr\r crlf\r\n \u202eRTL\u202c 🎬`;
    const readable = title.replace('\u0007', '').replace('\r\n', '\n').replace('\r', '\n');
    const fileUrl = `https://cdn.example.org/v/"q"<tag>.flv?a=1&b='x'&c=<script>`;
    const thumbUrl = `https://cdn.example.org/t/x.jpg?onerror="alert(1)"`;
    for (const template of ['flash', 'html5']) {
      const { writer, publicId, username } = oneVideo(
        playerConfig({ template }),
        { public_id: `evil"<id>&'`, title, file_url: fileUrl, thumbnail_url: thumbUrl, captions_url: 'javascript:alert(1)' },
        { username: `m"<al>&'` },
      );
      const dir = `${publicId}/oembed`;
      const json = JSON.parse(writer.text(`${dir}/index.json`)) as Record<string, string>;
      expect(json.title).toBe(readable);
      expect(json.author_name).toBe(username);
      expect(json.web_page).toBe(`https://videos.example.org/${encodeURIComponent(publicId)}/embed/`);
      expect(json.thumbnail_url).toBe(new URL(thumbUrl).href);
      // Inlined in a page or wrapped as JSONP, the JSON cannot close a script element.
      expect(writer.text(`${dir}/index.json`)).not.toMatch(/[<>]/);
      expect(oembedJsonErrors({ json: writer.text(`${dir}/index.json`) })).toEqual({});
      expect(jing(OEMBED_RNC, { xml: writer.text(`${dir}/xml`) }).ok).toBe(true);
      expect(parseOembedXml({ xml: writer.text(`${dir}/xml`) }).xml!.fields).toContainEqual(['title', readable]);

      expect(writer.text(`${dir}/html`)).toBe(json.html);
      const top = onlyElement(parseHtml(writer.text(`${dir}/html`)));
      const elements = allElements([top]);
      const allowed = template === 'flash' ? ['object', 'param', 'embed'] : ['video', 'source', 'a'];
      expect(new Set(elements.map((e) => e.tag))).toEqual(new Set(allowed));
      // No attribute the template did not write (an event handler smuggled in by a value, say).
      const attributeNames = new Set(elements.flatMap((e) => Object.keys(e.attrs)));
      expect(attributeNames).toEqual(
        new Set(
          template === 'flash'
            ? ['width', 'height', 'type', 'data', 'allowfullscreen', 'allowscriptaccess', 'bgcolor', 'title', 'name', 'value', 'src', 'flashvars']
            : ['width', 'height', 'controls', 'playsinline', 'preload', 'poster', 'title', 'src', 'type', 'href', 'target'],
        ),
      );
      for (const element of elements) if ('title' in element.attrs) expect(element.attrs.title).toBe(readable);
      const urls = elements.flatMap((e) => [e.attrs.src, e.attrs.data, e.attrs.poster, e.attrs.href, e.attrs.movie]).filter(Boolean);
      for (const url of urls) expect(['http:', 'https:']).toContain(new URL(url!).protocol);
      if (template === 'flash') {
        const vars = Object.fromEntries(parseFlashvars(elements.find((e) => e.tag === 'embed')!.attrs.flashvars!));
        expect(vars).toMatchObject({ file: new URL(fileUrl).href, image: new URL(thumbUrl).href, captions: '', link: json.web_page });
        expect(vars.recommendations).toBe(`https://videos.example.org/${encodeURIComponent(username)}/openrecommender/`);
      } else {
        const [video] = elements;
        expect(video!.attrs.poster).toBe(new URL(thumbUrl).href);
        expect(elements.find((e) => e.tag === 'source')!.attrs.src).toBe(new URL(fileUrl).href);
        const link = elements.find((e) => e.tag === 'a')!;
        expect(link.attrs.href).toBe(json.web_page);
        expect(link.children).toEqual([{ text: readable }]);
      }
    }
  });

  it('answers with an iframe of the embed page by default: size, title, no border, full screen, lazy', () => {
    const { writer } = oneVideo(playerConfig({ width: 640, height: 360 }, 'iframe'), { title: 'A "clip" & <more>' }, {}, WITH_EMBED_PAGE);
    const json = JSON.parse(writer.text('clip1/oembed/index.json')) as Record<string, unknown>;
    expect(writer.text('clip1/oembed/html')).toBe(json.html);
    const iframe = onlyElement(parseHtml(writer.text('clip1/oembed/html')));
    expect(iframe.tag).toBe('iframe');
    expect(iframe.attrs).toEqual({
      src: 'https://videos.example.org/clip1/embed/',
      width: '640',
      height: '360',
      title: 'A "clip" & <more>',
      frameborder: '0',
      allow: 'fullscreen; picture-in-picture',
      allowfullscreen: '',
      loading: 'lazy',
    });
    expect(json).toMatchObject({ width: 640, height: 360, web_page: 'https://videos.example.org/clip1/embed/' });
    // The page it frames is written beside the oEmbed documents.
    expect(writer.files.has('clip1/embed/index.html')).toBe(true);
  });

  it('reports and skips a video whose id cannot be a path segment, and the video whose URLs cannot be published', () => {
    const { db, file } = fixture();
    const user = insertUser(db, { username: 'uploader' });
    const bad = ['..', 'a/b', 'back\\slash', ' padded', 'robots.txt', 'x'.repeat(256), 'nul\u0000'];
    for (const id of bad) insertVideo(db, user.id, { public_id: id });
    insertVideo(db, user.id, { public_id: 'scripted', file_url: 'javascript:alert(1)' });
    insertVideo(db, user.id, { public_id: 'fine' });
    const { writer, report, warnings } = buildInMemory(file, { only: new Set([...OEMBED_FORMATS, 'sitemap']) });
    expect(report.skipped.map((s) => s.key).sort()).toEqual([...bad, 'scripted'].sort());
    expect(report.skipped.every((s) => s.kind === 'video')).toBe(true);
    expect(warnings.some((w) => w.includes('"robots.txt"') && w.includes('site-wide file'))).toBe(true);
    expect(warnings.some((w) => w.includes('"scripted"') && w.includes('file_url'))).toBe(true);
    expect([...writer.files.keys()].filter((p) => p.includes('/oembed/')).sort()).toEqual([
      'fine/oembed/html',
      'fine/oembed/index.json',
      'fine/oembed/json',
      'fine/oembed/xml',
    ]);
    expect(writer.text('sitemap.xml')).not.toContain('scripted');
  });

  it('lists only the default URL in the sitemap, at the paths and content types of the URL table', () => {
    const { writer } = oneVideo(playerConfig(), {}, {}, new Set([...OEMBED_FORMATS, 'sitemap']));
    const table = FORMATS.filter((f) => OEMBED_FORMATS.has(f.name)).map((f) => f.scope === 'video' && [f.name, `${f.dir}/${f.urlName}`, `${f.dir}/${f.file}`, f.mediaType, f.inSitemap]);
    expect(table).toEqual([
      ['oembed', 'oembed/', 'oembed/index.json', 'application/json; charset=utf-8', true],
      ['oembed-json', 'oembed/json', 'oembed/json', 'application/json; charset=utf-8', false],
      ['oembed-xml', 'oembed/xml', 'oembed/xml', 'text/xml; charset=utf-8', false],
      ['oembed-html', 'oembed/html', 'oembed/html', 'text/html; charset=utf-8', false],
    ]);
    expect([...writer.files.keys()].sort()).toEqual(['clip1/oembed/html', 'clip1/oembed/index.json', 'clip1/oembed/json', 'clip1/oembed/xml', 'sitemap.xml']);
    const sitemap = writer.text('sitemap.xml');
    expect(sitemap).toContain('<loc>https://videos.example.org/clip1/oembed/</loc>');
    // Beside the video's own page (its entry in the video extension), one oEmbed URL.
    const page = createSiteContext(playerConfig(), FORMATS).paths.videoPage('clip1');
    const documents = [...sitemap.matchAll(/<loc>([^<]*)<\/loc>/g)].map((m) => m[1]).filter((loc) => loc !== page);
    expect(documents.filter((loc) => loc!.includes('oembed'))).toEqual(['https://videos.example.org/clip1/oembed/']);
  });

  it('matches the snapshots of each form (the iframe by default), and of the inline HTML5 and seed Flash players', async () => {
    const video = { id: 42, created_at: 1_704_067_242, updated_at: 1_704_067_242 };
    const { writer } = oneVideo(playerConfig({}, 'iframe'), video);
    await expect(writer.text('clip1/oembed/index.json')).toMatchFileSnapshot('__snapshots__/oembed.json');
    await expect(writer.text('clip1/oembed/xml')).toMatchFileSnapshot('__snapshots__/oembed.xml');
    await expect(writer.text('clip1/oembed/html')).toMatchFileSnapshot('__snapshots__/oembed.html');
    const inline = oneVideo(playerConfig(), video);
    await expect(inline.writer.text('clip1/oembed/html')).toMatchFileSnapshot('__snapshots__/oembed-inline.html');
    const flash = oneVideo(playerConfig({ template: 'flash' }), video);
    await expect(flash.writer.text('clip1/oembed/html')).toMatchFileSnapshot('__snapshots__/oembed-flash.html');
  });
});
