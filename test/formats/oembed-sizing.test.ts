import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import { createSiteContext, SAMPLE_VIDEO } from '../../src/pipeline/render/site-context.js';
import { fitPlayer, oembedJson, oembedResponse, oembedXml } from '../../src/formats/oembed.js';
import { FORMATS } from '../../src/formats/registry.js';
import { testConfig } from '../helpers/site-fixture.js';
import { allElements, OEMBED_RNC, oembedJsonErrors, parseHtml } from '../helpers/oembed-consumers.js';
import { jing } from '../helpers/validators.js';

/** A site whose player is 400×300, and a video whose thumbnail is 120×90. */
function site(width = 400, height = 300, template = DEFAULT_CONFIG.player.template, html: 'iframe' | 'inline' = 'inline') {
  return createSiteContext(testConfig({ oembed: { html }, player: { ...DEFAULT_CONFIG.player, width, height, template } }), FORMATS, new Date(0));
}

describe('oEmbed maxwidth and maxheight', () => {
  it('scale the player down keeping its aspect ratio, rounding the other side down', () => {
    const player = { width: 400, height: 300 };
    expect(fitPlayer(player, {})).toEqual({ width: 400, height: 300 });
    expect(fitPlayer(player, { maxwidth: 200 })).toEqual({ width: 200, height: 150 });
    expect(fitPlayer(player, { maxwidth: 250 })).toEqual({ width: 250, height: 187 });
    expect(fitPlayer(player, { maxheight: 100 })).toEqual({ width: 133, height: 100 });
    expect(fitPlayer(player, { maxwidth: 200, maxheight: 100 })).toEqual({ width: 133, height: 100 });
    expect(fitPlayer(player, { maxwidth: 100, maxheight: 200 })).toEqual({ width: 100, height: 75 });
    expect(fitPlayer(player, { maxwidth: 1, maxheight: 1 })).toEqual({ width: 1, height: 1 });
    expect(fitPlayer({ width: 1000, height: 10 }, { maxwidth: 50 })).toEqual({ width: 50, height: 1 });
  });

  it('never scale the player up', () => {
    expect(fitPlayer({ width: 400, height: 300 }, { maxwidth: 800, maxheight: 600 })).toEqual({ width: 400, height: 300 });
    expect(fitPlayer({ width: 400, height: 300 }, { maxwidth: 400 })).toEqual({ width: 400, height: 300 });
  });

  it('always fit within both maxima and keep the aspect ratio to within a pixel, for any sizes', () => {
    let checked = 0;
    for (const width of [1, 7, 320, 400, 853, 1920]) {
      for (const height of [1, 9, 180, 300, 480, 1080]) {
        for (const maxwidth of [undefined, 1, 50, 333, 640, 5000]) {
          for (const maxheight of [undefined, 1, 33, 240, 1000]) {
            const fitted = fitPlayer({ width, height }, { maxwidth, maxheight });
            expect(fitted.width).toBeGreaterThanOrEqual(1);
            expect(fitted.height).toBeGreaterThanOrEqual(1);
            expect(fitted.width).toBeLessThanOrEqual(Math.min(width, maxwidth ?? Infinity));
            expect(fitted.height).toBeLessThanOrEqual(Math.min(height, maxheight ?? Infinity));
            // The side that was scaled is within one pixel (rounding) of the exact ratio.
            if (fitted.width > 1 && fitted.height > 1) {
              expect(Math.abs(fitted.width * height - fitted.height * width)).toBeLessThanOrEqual(Math.max(width, height));
            }
            checked++;
          }
        }
      }
    }
    expect(checked).toBe(6 * 6 * 6 * 5);
  });

  it('size the markup and the response alike, and keep the thumbnail only where it fits', () => {
    const context = site();
    const small = oembedResponse(SAMPLE_VIDEO, context, { maxwidth: 100 });
    expect(small).toMatchObject({ width: 100, height: 75 });
    expect(small.thumbnail_url).toBeUndefined();
    expect(small.thumbnail_width).toBeUndefined();
    expect(small.thumbnail_height).toBeUndefined();
    const [video] = allElements(parseHtml(small.html));
    expect(video).toMatchObject({ tag: 'video', attrs: { width: '100', height: '75' } });
    // The seed's Flash markup carries the fitted size in its attributes and its `width` flashvar too.
    const flash = allElements(parseHtml(oembedResponse(SAMPLE_VIDEO, site(400, 300, 'flash'), { maxwidth: 100 }).html));
    expect(flash[0]).toMatchObject({ tag: 'object', attrs: { width: '100', height: '75' } });
    expect(flash.find((e) => e.tag === 'embed')!.attrs.flashvars).toContain('&width=100&');
    // The default html, the iframe of the embed page, takes the fitted size.
    const framed = allElements(parseHtml(oembedResponse(SAMPLE_VIDEO, site(400, 300, 'html5', 'iframe'), { maxwidth: 100 }).html));
    expect(framed).toMatchObject([{ tag: 'iframe', attrs: { width: '100', height: '75' } }]);

    const fits = oembedResponse(SAMPLE_VIDEO, context, { maxwidth: 120, maxheight: 90 });
    expect(fits).toMatchObject({ width: 120, height: 90, thumbnail_url: SAMPLE_VIDEO.thumbnailUrl, thumbnail_width: 120, thumbnail_height: 90 });
    const tooShort = oembedResponse(SAMPLE_VIDEO, context, { maxheight: 89 });
    expect(tooShort.thumbnail_url).toBeUndefined();

    const documents = { small, fits, tooShort };
    expect(oembedJsonErrors(Object.fromEntries(Object.entries(documents).map(([k, r]) => [k, oembedJson(r)])))).toEqual({});
    expect(jing(OEMBED_RNC, Object.fromEntries(Object.entries(documents).map(([k, r]) => [k, oembedXml(r)]))).output).toBe('');
  });

  it('give the static document when no maximum is asked for', () => {
    const context = site();
    expect(oembedResponse(SAMPLE_VIDEO, context, {})).toEqual(oembedResponse(SAMPLE_VIDEO, context));
    expect(oembedResponse(SAMPLE_VIDEO, context, { maxwidth: 4000 })).toEqual(oembedResponse(SAMPLE_VIDEO, context));
  });

  it('refuse a maximum that is not a whole number of pixels from 1 up', () => {
    const context = site();
    for (const bad of [0, -5, 1.5, Number.NaN, Infinity]) {
      expect(() => oembedResponse(SAMPLE_VIDEO, context, { maxwidth: bad })).toThrow(/maxwidth must be a whole number/);
      expect(() => oembedResponse(SAMPLE_VIDEO, context, { maxheight: bad })).toThrow(/maxheight must be a whole number/);
    }
  });
});
