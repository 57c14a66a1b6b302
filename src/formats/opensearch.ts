import type { SiteFormat } from './format.js';
import { NS, xmlDocument } from '../render/xml.js';
import { truncate } from '../render/truncate.js';

/** OpenSearch 1.1 description of the site's search (seed section 4, static files). */


export const opensearch: SiteFormat = {
  name: 'opensearch',
  scope: 'site',
  file: 'opensearch.xml',
  mediaType: 'application/opensearchdescription+xml; charset=utf-8',
  inSitemap: false,
  summary: "OpenSearch 1.1 description of the site's search",
  cacheClass: 'site',

  *render(_index, site) {
    const c = site.config;
    const body = xmlDocument('OpenSearchDescription', { xmlns: NS.opensearch }, (root) => {
      root
        .leaf('ShortName', truncate(c.siteName, 16))
        .leaf('LongName', truncate(c.siteName, 48))
        .leaf('Description', truncate(c.siteDescription || c.siteName, 1024));
      root.el('Url', { type: 'text/html', template: site.paths.searchTemplate() });
      root.el('Url', { type: 'application/opensearchdescription+xml', rel: 'self', template: site.paths.siteUrl('opensearch.xml') });
      root.leaf('Contact', c.contactEmail);
      // OpenSearch 1.1 makes Image's height, width and type optional, but the W3C Feed Validation
      // Service refuses an Image without them: with any of them unknown, no Image.
      if (c.logoUrl !== '' && c.logoWidth !== null && c.logoHeight !== null && c.logoType !== null) {
        root.leaf('Image', c.logoUrl, { height: c.logoHeight, width: c.logoWidth, type: c.logoType });
      }
      root.leaf('Language', c.language).leaf('InputEncoding', 'UTF-8').leaf('OutputEncoding', 'UTF-8');
    }, { engine: site.xmlEngine });
    yield { file: 'opensearch.xml', body };
  },
};
