import { describe, expect, it } from 'vitest';
import { HOSTILE } from '../../src/db/demo-data.js';
import type { SiteContext } from '../../src/formats/format.js';
import { FORMATS } from '../../src/formats/registry.js';
import { itemDescription } from '../../src/formats/rss.js';
import type { VideoView } from '../../src/model/views.js';
import { createSiteContext, SAMPLE_VIDEO } from '../../src/pipeline/render/site-context.js';
import { w3cDate } from '../../src/render/dates.js';
import { handlebars } from '../../src/render/templates.js';
import { cdataSections, xmlChars } from '../../src/render/xml.js';
import { testConfig } from '../helpers/site-fixture.js';

/**
 * The RSS item description is built as one string (src/formats/rss.ts, for speed). It used to be
 * this Handlebars template, which stays here as the oracle: the two must agree to the byte,
 * hostile text and odd page templates included, once the characters XML cannot carry are removed
 * (xmlChars: the feed's CDATA section did that to the template's output; the string does it to
 * each value, so it can go into one section as it is).
 */
const ORACLE = handlebars.compile(
  `<p><a href="{{pageUrl}}"><img src="{{thumbnailUrl}}" width="{{thumbnailWidth}}" height="{{thumbnailHeight}}" alt="{{title}}"></a></p>` +
    `<p>{{description}}</p>` +
    `<p>Added by <a href="{{uploaderUrl}}">{{uploader}}</a></p>` +
    `{{#if tags.length}}<p>Tags:{{#each tags}} <a href="{{url}}" rel="tag">{{name}}</a>{{/each}}</p>{{/if}}` +
    `<p>Date: {{date}}</p>`,
  { strict: true },
);

const HOSTILE_VALUES = [...Object.values(HOSTILE), `&<>"'\`=`, '', '&amp; &#65; &copy;', 'a b\u0000c\uFFFE\uD800', ']]> ]]]]>>', 'cr\r\nlf\rcr'];

function video(text: string, i: number): VideoView {
  // Names and tags go into URLs; the database gives them well formed (a lone surrogate cannot come from UTF-8).
  const name = text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '');
  return {
    ...SAMPLE_VIDEO,
    publicId: `v ${name}`,
    title: text,
    description: `${text} ${i}`,
    thumbnailUrl: `https://example.org/t/${i}?a=1&b="2"<x>`,
    thumbnailWidth: i,
    thumbnailHeight: 0,
    tags: i % 3 === 0 ? [] : [name, `tag${i}`],
    uploader: { ...SAMPLE_VIDEO.uploader, username: `user${name}` },
    createdAt: new Date(Date.UTC(2020, 1, 29, 23, 59, 59) + i * 86_400_000),
  };
}

function expected(v: VideoView, site: SiteContext): string {
  return xmlChars(ORACLE({
    pageUrl: site.paths.videoPage(v.publicId),
    thumbnailUrl: v.thumbnailUrl,
    thumbnailWidth: v.thumbnailWidth,
    thumbnailHeight: v.thumbnailHeight,
    title: v.title,
    description: v.description,
    uploaderUrl: site.paths.userPage(v.uploader.username),
    uploader: v.uploader.username,
    tags: v.tags.map((name) => ({ name, url: site.paths.tagPage(name) })),
    date: w3cDate(v.createdAt),
  }));
}

describe('RSS item description', () => {
  const pages = [
    testConfig().pages,
    { ...testConfig().pages, user: '{base}/u?name={user}&x="1"', video: '{base}/watch?v={video}#{video}', tag: '{base}/t/{tag}/{tag}' },
  ];
  for (const [n, pageTemplates] of pages.entries()) {
    it(`is byte for byte what its Handlebars template gave (page templates ${n + 1})`, () => {
      const site = createSiteContext(testConfig({ pages: pageTemplates }), FORMATS, new Date(0));
      HOSTILE_VALUES.forEach((text, i) => {
        const v = video(text, i);
        const description = itemDescription(v, site);
        expect(description, JSON.stringify(text)).toBe(expected(v, site));
        // What the feed writes as one CDATA section as it is: nothing to remove, nothing to split.
        expect(cdataSections(description)).toEqual([description]);
      });
    });
  }

  it('links the tags of one tag list to each site\'s own tag pages (rss.ts keeps their markup per site and list)', () => {
    const sites = pages.map((pageTemplates) => createSiteContext(testConfig({ pages: pageTemplates }), FORMATS, new Date(0)));
    // One array for every video, as a reader hands out one per combination of tags.
    const tags = Object.freeze(['cats & "dogs"', 'b']);
    for (let i = 0; i < 6; i++) {
      const site = sites[i % sites.length]!;
      const v = { ...video('shared', i), tags };
      expect(itemDescription(v, site), `video ${i}`).toBe(expected(v, site));
    }
  });
});
