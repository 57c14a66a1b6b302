import type { SiteFormat } from './format.js';

/**
 * robots.txt: names the sitemap and carries the seed's usage terms (section 8) as comments, where
 * crawlers' operators read them. Only meaningful at the root of a host: with a base URL that has a
 * path, copy it to the host's root (docs/hosting.md).
 */
export const USAGE_TERMS = [
  'Usage terms for scripts, spiders, scrapers, search engines and other automated clients:',
  '- Keep your cumulative use at or under 2 GB per month per domain, individual or organisation.',
  '- Do not hot-link site content such as video files: embed the player instead.',
  '- Do not spread spidering over several servers or domains, or hide or spoof your identity.',
  '- Do not remove, hide or impede advertisements attached to an embedded video.',
  'Clients that break these terms are blocked by server, IP range, domain or application.',
];

export const robots: SiteFormat = {
  name: 'robots',
  scope: 'site',
  file: 'robots.txt',
  mediaType: 'text/plain; charset=utf-8',
  inSitemap: false,
  summary: 'robots.txt naming the sitemap, with the usage terms',
  cacheClass: 'site',
  deployLast: true,

  *render(_index, site) {
    const lines = USAGE_TERMS.map((line) => `# ${line}`);
    lines.push('', 'User-agent: *');
    const disallow = site.config.robots.disallow.map((path) => `${site.paths.basePath}${path}`);
    if (disallow.length === 0) lines.push('Disallow:');
    for (const path of disallow) lines.push(`Disallow: ${path}`);
    lines.push('', `Sitemap: ${site.paths.siteUrl('sitemap.xml')}`, '');
    yield { file: 'robots.txt', body: lines.join('\n') };
  },
};
