import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import type { SiteConfig } from '../../src/config/site-config.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { FORMATS } from '../../src/formats/registry.js';
import { TemplateError } from '../../src/render/templates.js';
import { buildInMemory, createDemoDb, createTestDb, insertUser, insertVideo, testConfig } from '../helpers/site-fixture.js';
import { allElements, isElement, parseHtml, type HtmlElement } from '../helpers/oembed-consumers.js';
import { useTempDir } from '../helpers/temp-dir.js';

function config(player: Partial<SiteConfig['player']>): SiteConfig {
  return testConfig({ oembed: { html: 'inline' }, player: { ...DEFAULT_CONFIG.player, ...player } });
}

/** A templates directory of the test's own, holding `embed/<name>.hbs` for each entry. */
function templatesDir(templates: Record<string, string>): string {
  const dir = useTempDir('vidfeeds-templates-');
  mkdirSync(join(dir, 'embed'));
  for (const [name, source] of Object.entries(templates)) writeFileSync(join(dir, 'embed', `${name}.hbs`), source);
  return dir;
}

const IFRAME = '<iframe src="{{pageUrl}}embed" width="{{width}}" height="{{height}}" title="{{title}}" loading="lazy"></iframe>\n';

/** Every file of a build with the markup taken out: the JSON and XML `html` fields and the HTML documents. */
function withoutMarkup(files: Map<string, Buffer>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [path, body] of files) {
    const text = body.toString('utf8');
    if (path.endsWith('/oembed/html')) out.set(path, '(markup)');
    else if (path.endsWith('/embed/index.html')) out.set(path, text.replace(/<div class="player">.*<\/div>/, '<div class="player">(markup)</div>'));
    else if (path.endsWith('/oembed/index.json') || path.endsWith('/oembed/json')) out.set(path, JSON.stringify({ ...JSON.parse(text), html: '(markup)' }));
    else if (path.endsWith('/oembed/xml')) out.set(path, text.replace(/<html>[^<]*<\/html>/, '<html>(markup)</html>'));
    else out.set(path, text);
  }
  return out;
}

describe('embed templates', () => {
  it('switching to HTML5 or to a templates directory of our own changes the markup and nothing else', () => {
    const { file } = createDemoDb();
    const flash = buildInMemory(file, { config: config({ template: 'flash' }) });
    const html5 = buildInMemory(file, { config: config({ template: 'html5' }) });
    const own = buildInMemory(file, { config: config({ template: 'iframe', templatesDir: templatesDir({ iframe: IFRAME }) }) });
    const reference = withoutMarkup(flash.writer.files);
    expect([...reference.keys()].filter((p) => p.endsWith('/oembed/html')).length).toBeGreaterThan(100);
    for (const other of [html5, own]) {
      expect(withoutMarkup(other.writer.files)).toEqual(reference);
      for (const [path, body] of flash.writer.files) {
        if (path.includes('/oembed/') || path.includes('/embed/')) expect(other.writer.files.get(path)!.equals(body), path).toBe(false);
      }
    }
    const html = [...own.writer.files].find(([p]) => p.endsWith('/oembed/html'))![1].toString('utf8');
    expect(allElements(parseHtml(html)).map((e) => e.tag)).toEqual(['iframe']);
  });

  it('renders the HTML5 video (the default) with its poster, typed source, captions track and link', () => {
    const { db, file } = createTestDb();
    const user = insertUser(db, { username: 'uploader' });
    insertVideo(db, user.id, { public_id: 'with', title: 'With captions', file_type: 'video/mp4', file_url: 'https://cdn.example.org/v/with.mp4', thumbnail_url: 'https://cdn.example.org/t/with.jpg', captions_url: 'https://cdn.example.org/c/with.vtt' });
    insertVideo(db, user.id, { public_id: 'without', title: 'No captions', file_type: 'video/webm', captions_url: null });
    // Nothing names the template: HTML5 is the default.
    const { writer } = buildInMemory(file, { config: config({ width: 640, height: 360, linkTarget: '_top' }), only: new Set(['oembed-html']) });

    const [video, ...rest] = parseHtml(writer.text('with/oembed/html'));
    expect(rest).toEqual([]);
    expect(video).toMatchObject({
      tag: 'video',
      attrs: { width: '640', height: '360', controls: '', playsinline: '', preload: 'none', poster: 'https://cdn.example.org/t/with.jpg', title: 'With captions' },
    });
    const children = (video as HtmlElement).children.filter(isElement);
    expect(children.map((c) => c.tag)).toEqual(['source', 'track', 'a']);
    expect(children[0]!.attrs).toEqual({ src: 'https://cdn.example.org/v/with.mp4', type: 'video/mp4' });
    expect(children[1]!.attrs).toEqual({ kind: 'captions', src: 'https://cdn.example.org/c/with.vtt', label: 'Captions', default: '' });
    expect(children[2]!.attrs).toEqual({ href: 'https://videos.example.org/with/embed/', target: '_top' });
    expect(children[2]!.children).toEqual([{ text: 'With captions' }]);

    const without = allElements(parseHtml(writer.text('without/oembed/html')));
    expect(without.map((e) => e.tag)).toEqual(['video', 'source', 'a']);
    expect(without[1]!.attrs.type).toBe('video/webm');
  });

  it('writes the source type only when the database holds a well-formed media type', () => {
    const { db, file } = createTestDb();
    const user = insertUser(db, { username: 'uploader' });
    const types = { plain: 'video/mp4', codecs: 'video/webm; codecs="vp8, vorbis"', bare: 'flv', spaced: 'video/mp4 extra', markup: 'video/<b>' };
    for (const [id, type] of Object.entries(types)) insertVideo(db, user.id, { public_id: id, file_type: type });
    const { writer } = buildInMemory(file, { config: config({}), only: new Set(['oembed-html']) });
    const sourceOf = (id: string) => allElements(parseHtml(writer.text(`${id}/oembed/html`))).find((e) => e.tag === 'source')!.attrs;
    expect(sourceOf('plain').type).toBe('video/mp4');
    expect(sourceOf('codecs').type).toBe('video/webm; codecs="vp8, vorbis"');
    // A browser skips a source whose type it cannot parse, and sniffs one without a type.
    for (const id of ['bare', 'spaced', 'markup']) {
      expect(sourceOf(id), id).not.toHaveProperty('type');
      expect(sourceOf(id).src, id).toMatch(/^https:/);
    }
  });

  it('asks for the files with CORS only when player.crossOrigin is on', () => {
    const { db, file } = createTestDb();
    const user = insertUser(db, { username: 'uploader' });
    insertVideo(db, user.id, { public_id: 'clip', captions_url: 'https://cdn.example.org/c/clip.vtt' });
    const videoOf = (crossOrigin: boolean) => {
      const { writer } = buildInMemory(file, { config: config({ crossOrigin }), only: new Set(['oembed-html']) });
      return allElements(parseHtml(writer.text('clip/oembed/html')))[0]!;
    };
    expect(videoOf(false).attrs.crossorigin).toBeUndefined();
    expect(videoOf(true).attrs.crossorigin).toBe('anonymous');
  });

  it('finds a template in the site directory first, and falls back to the shipped ones', () => {
    const dir = templatesDir({ flash: IFRAME });
    const own = createSiteContext(config({ template: 'flash', templatesDir: dir }), FORMATS);
    expect(own.embed.templateFile).toBe(join(dir, 'embed', 'flash.hbs'));
    const shipped = createSiteContext(config({ template: 'html5', templatesDir: dir }), FORMATS);
    expect(shipped.embed.templateFile).toMatch(/templates\/embed\/html5\.hbs$/);
  });

  it('stops before the build on a missing, broken or misspelt template, naming it', () => {
    const dir = templatesDir({
      broken: '<object>{{#if title}}</object>',
      misspelt: '<object title="{{titel}}"></object>',
      // Only a video without captions reaches the else branch: it is checked too.
      elsewrong: '<video>{{#if captionsUrl}}<track src="{{captionsUrl}}">{{else}}{{captionUrl}}{{/if}}</video>',
    });
    const attempt = (player: Partial<SiteConfig['player']>) => () => createSiteContext(config(player), FORMATS);
    expect(attempt({ template: 'nope' })).toThrow(TemplateError);
    expect(attempt({ template: 'nope' })).toThrow(/embed\/nope\.hbs: not found/);
    for (const name of ['broken', 'misspelt', 'elsewrong']) {
      expect(attempt({ template: name, templatesDir: dir }), name).toThrow(TemplateError);
      expect(attempt({ template: name, templatesDir: dir }), name).toThrow(join(dir, 'embed', `${name}.hbs`));
    }
    expect(attempt({ template: 'misspelt', templatesDir: dir })).toThrow('"titel" not defined (line 1, column 18)');
    expect(attempt({ template: 'elsewrong', templatesDir: dir })).toThrow('"captionUrl" not defined');
    expect(attempt({ template: 'broken', templatesDir: dir })).toThrow(/Parse error on line 1: Expecting .*got 'EOF'/);
    expect(attempt({ template: 'flash', templatesDir: join(dir, 'no-such-dir') })).toThrow(/no-such-dir \(player\.templatesDir\) is not a directory/);
  });
});
