import type { SiteFormat } from './format.js';
import { xmlDocument } from '../render/xml.js';

/**
 * crossdomain.xml for the Flash player (seed section 4). By default it allows no other domain
 * (least privilege: no other site's Flash content reads this one unless the operator says so);
 * `crossDomain.allowAccessFrom` names the domains that may read the site.
 */
export const crossdomain: SiteFormat = {
  name: 'crossdomain',
  scope: 'site',
  file: 'crossdomain.xml',
  mediaType: 'text/x-cross-domain-policy',
  inSitemap: false,
  summary: 'Adobe cross-domain policy (no other domain unless configured)',
  cacheClass: 'site',

  *render(_index, site) {
    const policy = site.config.crossDomain;
    const doctype = { systemId: 'http://www.adobe.com/xml/dtds/cross-domain-policy.dtd' };
    const body = xmlDocument('cross-domain-policy', undefined, (root) => {
      root.el('site-control', { 'permitted-cross-domain-policies': policy.permittedCrossDomainPolicies });
      for (const domain of policy.allowAccessFrom) root.el('allow-access-from', { domain, secure: 'true' });
    }, { doctype, engine: site.xmlEngine });
    yield { file: 'crossdomain.xml', body };
  },
};
