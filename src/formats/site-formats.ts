import type { SiteFormat } from './format.js';
import { crossdomain } from './crossdomain.js';
import { indexNowKey } from './indexnow-key.js';
import { opensearch } from './opensearch.js';
import { robots } from './robots.js';
import { sitemap } from './sitemap.js';

/**
 * The site-wide documents, in the order of the format table (registry.ts). Their file names are
 * taken at the top of the tree, so no user or video may have them as a name: code that only needs
 * to know those names (storing a recommendation) imports this and not the whole table.
 */
export const SITE_FORMATS: readonly SiteFormat[] = [sitemap, robots, opensearch, crossdomain, indexNowKey];
