import type { SiteContext, UserFormat } from './format.js';
import type { UserBundle, VideoView } from '../model/views.js';
import { rfc822, w3cDate } from '../render/dates.js';
import { handlebars } from '../render/templates.js';
import { NS, xmlDocument } from '../render/xml.js';

/**
 * RSS 2.0 feed of a user's latest public uploads (seed 2.8), newest first, at most 20, with Media
 * RSS. Differences from the seed: the item `author` becomes `dc:creator`, because RSS 2.0's
 * `author` holds an e-mail address.
 */

/** Handlebars' own HTML escaping (`&<>"'\`=`), as `{{value}}` in a template applies it. */
const html = handlebars.Utils.escapeExpression;

/**
 * The item description (seed 2.8): linked thumbnail, description, added-by link, tag links, date
 * line. Built as one string with the escaping a Handlebars template would apply (the template is
 * in test/formats/rss-description.test.ts, which holds the two to the byte): compiling it cost
 * each feed of 20 items about 40 µs in Handlebars' runtime (docs/performance.md).
 */
export function itemDescription(video: VideoView, site: SiteContext, page = site.paths.videoPage(video.publicId)): string {
  const tags = video.tags.map((name) => ` <a href="${html(site.paths.tagPage(name))}" rel="tag">${html(name)}</a>`).join('');
  return (
    `<p><a href="${html(page)}"><img src="${html(video.thumbnailUrl)}" width="${video.thumbnailWidth}"` +
    ` height="${video.thumbnailHeight}" alt="${html(video.title)}"></a></p>` +
    `<p>${html(video.description)}</p>` +
    `<p>Added by <a href="${html(site.paths.userPage(video.uploader.username))}">${html(video.uploader.username)}</a></p>` +
    (tags === '' ? '' : `<p>Tags:${tags}</p>`) +
    `<p>Date: ${html(w3cDate(video.createdAt))}</p>`
  );
}

/** Items in a user's RSS feed, newest first: the reader loads no more uploads than this (PRODUCT.md, "done"). */
export const RSS_ITEMS = 20;

export const rss: UserFormat = {
  name: 'rss',
  scope: 'user',
  dir: 'rss',
  file: 'index.rss',
  urlName: '',
  mediaType: 'application/rss+xml; charset=utf-8',
  inSitemap: true,
  summary: "RSS 2.0 feed of the user's latest public uploads",
  needs: ['uploads'],

  render({ user, uploads }: UserBundle, site: SiteContext): string {
    return xmlDocument('rss', { version: '2.0', 'xmlns:media': NS.media, 'xmlns:dc': NS.dc, 'xmlns:atom': NS.atom }, (root) => {
      const channel = root.el('channel');
      const title = `${site.config.siteName}: latest videos of ${user.displayName || user.username}`;
      const link = site.paths.userPage(user.username);
      channel
        .leaf('title', title)
        .leaf('link', link)
        .leaf('description', `The latest videos ${user.username} uploaded to ${site.config.siteName}.`)
        .leaf('language', site.config.language)
        .leaf('copyright', site.config.copyright);
      if (uploads.length > 0) channel.leaf('pubDate', rfc822(uploads[0]!.createdAt));
      channel.leaf('generator', site.generator.name);
      channel.el('atom:link', { rel: 'self', type: 'application/rss+xml', href: site.paths.url(rss, user.username) });
      if (site.config.logoUrl !== '') {
        channel.el('image').leaf('url', site.config.logoUrl).leaf('title', title).leaf('link', link);
      }
      for (const video of uploads) {
        const page = site.paths.videoPage(video.publicId);
        const item = channel.el('item');
        item.leaf('title', video.title).leaf('link', page).cdata('description', itemDescription(video, site, page));
        item.leaf('dc:creator', video.uploader.username);
        if (video.category !== null) item.leaf('category', video.category);
        if (video.fileSize !== null) item.el('enclosure', { url: video.fileUrl, length: video.fileSize, type: video.fileType });
        item.leaf('guid', page, { isPermaLink: 'true' }).leaf('pubDate', rfc822(video.createdAt));
        item.el('media:content', {
          url: video.fileUrl,
          type: video.fileType,
          medium: 'video',
          fileSize: video.fileSize,
          duration: video.durationSeconds,
          width: video.width,
          height: video.height,
        });
        item.el('media:thumbnail', { url: video.thumbnailUrl, width: video.thumbnailWidth, height: video.thumbnailHeight });
        item.leaf('media:title', video.title, { type: 'plain' });
        if (video.tags.length > 0) item.leaf('media:keywords', video.tags.join(', '));
      }
    });
  },
};
