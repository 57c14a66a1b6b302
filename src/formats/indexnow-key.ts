import type { SiteFormat } from './format.js';

/**
 * The IndexNow key file: the site's key (`indexNow.key` in the configuration) as the whole body,
 * at the top of the tree. Search engines fetch it at the `keyLocation` vidfeeds names in each
 * submission to check that the submitter controls the site; the URLs submitted must lie under
 * its folder, which is the base URL. Written only when a key is configured, so a site without
 * IndexNow has no such file (and a removed key removes it).
 */
export const indexNowKey: SiteFormat = {
  name: 'indexnow-key',
  scope: 'site',
  file: 'indexnow-key.txt',
  mediaType: 'text/plain; charset=utf-8',
  inSitemap: false,
  summary: 'the IndexNow key (only when indexNow.key is set)',
  cacheClass: 'site',

  *render(_index, site) {
    const key = site.config.indexNow.key;
    if (key !== null) yield { file: 'indexnow-key.txt', body: key };
  },
};
