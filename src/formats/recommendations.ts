import type { SiteContext, UserFormat } from './format.js';
import type { UserBundle } from '../model/views.js';
import { minutesSeconds } from '../render/dates.js';
import { xmlDocument } from '../render/xml.js';

/**
 * The user's public recommendations (seed 2.1), newest first, as many as `recommendationsCount`
 * (8 by default): the list the embedded player shows after a video (its `recommendations`
 * flashvar points here). Our own format, so its schema ships with the project:
 * docs/schemas/recommendations.xsd. Beyond the seed's `title` (with `duration` as mm:ss when
 * known), `link` and `image`, a `description` is written when the submitter gave one: the submit
 * form collects it and nothing else would publish it.
 */
export const recommendations: UserFormat = {
  name: 'recommendations',
  scope: 'user',
  dir: 'openrecommender',
  file: 'index.xml',
  urlName: '',
  mediaType: 'application/xml; charset=utf-8',
  inSitemap: false,
  summary: "the user's public video recommendations, newest first (player recommendations list)",
  cacheClass: 'feeds',
  needs: ['recommendations'],
  recommendationEndpoint: true,

  render({ recommendations: list }: UserBundle, site: SiteContext): string {
    return xmlDocument('recommendations', undefined, (root) => {
      for (const item of list) {
        const recommendation = root.el('recommendation');
        recommendation
          .leaf('title', item.title, { duration: item.durationSeconds === null ? null : minutesSeconds(item.durationSeconds) })
          .leaf('link', item.link)
          .leaf('image', item.image)
          .optionalLeaf('description', item.description);
      }
    }, { engine: site.xmlEngine });
  },
};
