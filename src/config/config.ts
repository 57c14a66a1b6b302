import { readFileSync, existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ALL_ENCODINGS, isEncoding, type Encoding } from '../build/compression.js';
import { FORMATS } from '../formats/registry.js';

/** Every site-level setting the documents need. Loaded once, validated before any file is touched. */
export interface SiteConfig {
  /** Absolute http(s) URL the tree is served under; may carry a path. No trailing slash. */
  baseUrl: string;
  siteName: string;
  siteDescription: string;
  /** Language of the site's text (RSS `language`, Atom `hreflang`, OpenSearch `Language`). */
  language: string;
  copyright: string;
  /** Address of the site's operator: FOAF `admin:errorReportsTo`, OpenSearch `Contact`. */
  contactEmail: string;
  /** Site logo (RSS channel image). */
  logoUrl: string;
  /** URL templates of the site's own pages, which our documents link to. */
  pages: PageTemplates;
  /** Number of recommendations in `/<user>/openrecommender/`. */
  recommendationsCount: number;
  crossDomain: CrossDomainConfig;
  robots: RobotsConfig;
  player: PlayerConfig;
  /** Make an unpublishable row (a bad name) fatal instead of reported and skipped. */
  strict: boolean;
  /** Pre-compressed forms written beside each text document (`.gz`, `.br`); none by default. */
  compress: Encoding[];
  cacheControl: CacheControlConfig;
}

/**
 * The Cache-Control header every host configuration and `vidfeeds serve` send, per format: the
 * format's class (src/hosting/cache-control.ts says which is which), unless `formats` names it.
 */
export interface CacheControlConfig {
  /** Feeds and lists that change with a user's activity: RSS, Atom, recommendations, XSPF, APML, OPML. */
  feeds: string;
  /** Documents that change rarely: oEmbed, FOAF, hCard. */
  profiles: string;
  /** Site-wide files: sitemap, robots.txt, opensearch.xml, crossdomain.xml. */
  site: string;
  /** Per format name, over its class. */
  formats: Record<string, string>;
}

export interface PageTemplates {
  /** Profile page of a user. Placeholders: {base}, {user}. */
  user: string;
  /** Page of a video. Placeholders: {base}, {video}. */
  video: string;
  /** Page of a group. Placeholders: {base}, {group}. */
  group: string;
  /** Page listing a tag's videos. Placeholders: {base}, {tag}. */
  tag: string;
  /** The site's search, as an OpenSearch template. Placeholders: {base}, {searchTerms} (kept for clients). */
  search: string;
}

export interface CrossDomainConfig {
  /** Domains (or `*.example.org` wildcards) allowed to read the site from Flash. Empty: none. */
  allowAccessFrom: string[];
  permittedCrossDomainPolicies: 'none' | 'master-only' | 'by-content-type' | 'all';
}

export interface RobotsConfig {
  /** Extra path prefixes to disallow for every crawler. */
  disallow: string[];
}

export interface PlayerConfig {
  /** Name of the embed template in the templates directory (`flash` or `html5` ship with vidfeeds). */
  template: string;
  /** A site's own templates directory; templates found there win over the shipped ones. */
  templatesDir: string | null;
  width: number;
  height: number;
  /** URL of the Flash player file (`movie`, `data`, flashvar `location`). */
  playerUrl: string;
  /** Watermark image (flashvar `logo`); empty for none. */
  logoUrl: string;
  /** Statistics callback URL (flashvar `callback`); empty for none. */
  statsCallbackUrl: string;
  /** Flashvar `linkfromdisplay`: clicking the picture opens the video page. */
  linkFromDisplay: boolean;
  linkTarget: string;
  backColor: string;
  frontColor: string;
  lightColor: string;
  bgColor: string;
}

export const DEFAULT_CONFIG: SiteConfig = {
  baseUrl: 'http://localhost:8080',
  siteName: 'vidfeeds demo',
  siteDescription: 'Videos shared by the people of the vidfeeds demo site.',
  language: 'en',
  copyright: 'Copyright the uploaders. All rights reserved.',
  contactEmail: 'webmaster@example.org',
  logoUrl: 'http://localhost:8080/static/logo.png',
  pages: {
    user: '{base}/{user}/',
    video: '{base}/{video}/',
    group: '{base}/groups/{group}/',
    tag: '{base}/tags/{tag}/',
    search: '{base}/search?q={searchTerms}',
  },
  recommendationsCount: 8,
  crossDomain: { allowAccessFrom: [], permittedCrossDomainPolicies: 'master-only' },
  robots: { disallow: [] },
  player: {
    template: 'flash',
    templatesDir: null,
    width: 400,
    height: 300,
    playerUrl: 'http://localhost:8080/static/player.swf',
    logoUrl: '',
    statsCallbackUrl: '',
    linkFromDisplay: true,
    linkTarget: '_blank',
    backColor: '0x000000',
    frontColor: '0xCCCCCC',
    lightColor: '0x557722',
    bgColor: '#000000',
  },
  strict: false,
  compress: [],
  cacheControl: {
    feeds: 'public, max-age=900',
    profiles: 'public, max-age=86400',
    site: 'public, max-age=3600',
    formats: {},
  },
};

export const DEFAULT_CONFIG_FILE = 'vidfeeds.config.json';

/** A setting that is missing, mistyped or out of range. Exit code 2. */
export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    problem: string,
    readonly source: string,
  ) {
    super(`configuration ${source}: ${setting} ${problem}`);
    this.name = 'ConfigError';
  }
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Reads the configuration: defaults, then the file (the default file only if it exists; a file
 * named with --config must exist), then flags. Unknown keys are errors, so a typo never passes silently.
 */
export function loadConfig(options: { configFile?: string; overrides?: Partial<Record<string, unknown>>; cwd?: string }): SiteConfig {
  const cwd = options.cwd ?? process.cwd();
  let fromFile: Json = {};
  let source = 'defaults';
  const named = options.configFile !== undefined;
  const file = resolve(cwd, options.configFile ?? DEFAULT_CONFIG_FILE);
  if (named || existsSync(file)) {
    source = file;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError('file', `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`, file);
    }
    try {
      fromFile = JSON.parse(text) as Json;
    } catch (error) {
      throw new ConfigError('file', `is not valid JSON: ${(error as Error).message}`, file);
    }
  }
  const merged = mergeInto(structuredClone(DEFAULT_CONFIG) as unknown as Json, fromFile, '', source);
  for (const [key, value] of Object.entries(options.overrides ?? {})) {
    if (value === undefined) continue;
    setPath(merged, key, value as Json, 'command line');
  }
  const config = validateConfig(merged, source);
  // A relative templates directory in a file means a folder beside that file, wherever vidfeeds
  // runs from (a cron job's working directory is rarely the site's).
  const templatesDir = (fromFile as { player?: { templatesDir?: unknown } }).player?.templatesDir;
  if (typeof templatesDir === 'string' && config.player.templatesDir === templatesDir) {
    config.player.templatesDir = resolve(dirname(file), templatesDir);
  }
  return config;
}

function isObject(value: Json | undefined): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Settings whose keys are names (checked by validateConfig), not settings. */
const OPEN_MAPS = new Set(['cacheControl.formats']);

function mergeInto(base: Json, patch: Json, prefix: string, source: string): Json {
  if (!isObject(patch)) throw new ConfigError(prefix || '(root)', 'must be a JSON object', source);
  if (!isObject(base)) return patch;
  for (const [key, value] of Object.entries(patch)) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (key === '$schema') continue;
    if (!(key in base) && !OPEN_MAPS.has(prefix)) throw new ConfigError(name, 'is not a known setting', source);
    const current = base[key];
    base[key] = isObject(current) && !Array.isArray(current) ? mergeInto(current, value, name, source) : value;
  }
  return base;
}

function setPath(target: Json, dotted: string, value: Json, source: string): void {
  const parts = dotted.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    if (!isObject(node) || !isObject(node[part])) throw new ConfigError(dotted, 'is not a known setting', source);
    node = node[part];
  }
  const last = parts[parts.length - 1]!;
  if (!isObject(node) || !(last in node)) throw new ConfigError(dotted, 'is not a known setting', source);
  node[last] = value;
}

/** Checks every setting's type and range; returns the config with normalised values. */
export function validateConfig(raw: Json, source: string): SiteConfig {
  const c = raw as unknown as SiteConfig;
  const check = new Checker(source);
  c.baseUrl = check.httpUrl('baseUrl', c.baseUrl, { allowPath: true }).replace(/\/+$/, '');
  check.text('siteName', c.siteName, { min: 1, max: 200 });
  check.text('siteDescription', c.siteDescription, { max: 1024 });
  check.pattern('language', c.language, /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$/, 'a language tag such as en or pt-BR');
  check.text('copyright', c.copyright, { max: 1024 });
  check.pattern('contactEmail', c.contactEmail, /^[^\s@<>"]+@[^\s@<>"]+$/, 'an e-mail address');
  if (c.logoUrl !== '') check.httpUrl('logoUrl', c.logoUrl);
  check.object('pages', c.pages);
  check.template('pages.user', c.pages.user, ['{user}']);
  check.template('pages.video', c.pages.video, ['{video}']);
  check.template('pages.group', c.pages.group, ['{group}']);
  check.template('pages.tag', c.pages.tag, ['{tag}']);
  check.template('pages.search', c.pages.search, ['{searchTerms}']);
  check.integer('recommendationsCount', c.recommendationsCount, 1, 100);
  check.object('crossDomain', c.crossDomain);
  check.list('crossDomain.allowAccessFrom', c.crossDomain.allowAccessFrom, (name, value) =>
    check.pattern(name, value, /^(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/, 'a domain name (`*` alone is refused: name the domains)'),
  );
  check.oneOf('crossDomain.permittedCrossDomainPolicies', c.crossDomain.permittedCrossDomainPolicies, [
    'none',
    'master-only',
    'by-content-type',
    'all',
  ]);
  check.object('robots', c.robots);
  check.list('robots.disallow', c.robots.disallow, (name, value) =>
    check.pattern(name, value, /^\/[^\s#]*$/, 'a path starting with /'),
  );
  check.object('player', c.player);
  const p = c.player;
  check.pattern('player.template', p.template, /^[A-Za-z0-9][A-Za-z0-9_-]*$/, 'a template name such as flash or html5');
  if (p.templatesDir !== null) check.text('player.templatesDir', p.templatesDir, { min: 1, max: 4096 });
  check.integer('player.width', p.width, 1, 10000);
  check.integer('player.height', p.height, 1, 10000);
  check.httpUrl('player.playerUrl', p.playerUrl);
  if (p.logoUrl !== '') check.httpUrl('player.logoUrl', p.logoUrl);
  if (p.statsCallbackUrl !== '') check.httpUrl('player.statsCallbackUrl', p.statsCallbackUrl);
  check.boolean('player.linkFromDisplay', p.linkFromDisplay);
  check.pattern('player.linkTarget', p.linkTarget, /^_?[A-Za-z0-9_-]{1,64}$/, 'a link target such as _blank or _self');
  for (const key of ['backColor', 'frontColor', 'lightColor'] as const) {
    check.pattern(`player.${key}`, p[key], /^0x[0-9A-Fa-f]{6}$/, 'a colour written 0x followed by six hex digits');
  }
  check.pattern('player.bgColor', p.bgColor, /^#[0-9A-Fa-f]{6}$/, 'a colour written # followed by six hex digits');
  check.boolean('strict', c.strict);
  check.list('compress', c.compress, (name, value) => {
    if (!isEncoding(value)) check.fail(name, `must be one of ${ALL_ENCODINGS.map((e) => JSON.stringify(e)).join(', ')}, not ${describe(value)}`);
  });
  if (new Set(c.compress).size !== c.compress.length) check.fail('compress', 'names an encoding twice');
  check.object('cacheControl', c.cacheControl);
  for (const key of ['feeds', 'profiles', 'site'] as const) check.cacheControl(`cacheControl.${key}`, c.cacheControl[key]);
  check.object('cacheControl.formats', c.cacheControl.formats);
  const known = new Set(FORMATS.map((f) => f.name));
  for (const [name, value] of Object.entries(c.cacheControl.formats)) {
    if (!known.has(name)) check.fail(`cacheControl.formats.${name}`, `is not a format; known formats: ${[...known].join(', ')}`);
    check.cacheControl(`cacheControl.formats.${name}`, value);
  }
  return c;
}

class Checker {
  constructor(private readonly source: string) {}

  fail(setting: string, problem: string): never {
    throw new ConfigError(setting, problem, this.source);
  }

  object(setting: string, value: unknown): void {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) this.fail(setting, 'must be an object');
  }

  text(setting: string, value: unknown, { min = 0, max }: { min?: number; max: number }): string {
    if (typeof value !== 'string') this.fail(setting, `must be a string, not ${describe(value)}`);
    if (value.length < min) this.fail(setting, 'must not be empty');
    if (value.length > max) this.fail(setting, `must be at most ${max} characters`);
    if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(value)) this.fail(setting, 'must not contain control characters');
    return value;
  }

  pattern(setting: string, value: unknown, pattern: RegExp, what: string): string {
    const text = this.text(setting, value, { min: 1, max: 2048 });
    if (!pattern.test(text)) this.fail(setting, `must be ${what}, not ${JSON.stringify(text)}`);
    return text;
  }

  oneOf<T extends string>(setting: string, value: unknown, allowed: readonly T[]): T {
    if (!allowed.includes(value as T)) {
      this.fail(setting, `must be one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}, not ${describe(value)}`);
    }
    return value as T;
  }

  integer(setting: string, value: unknown, min: number, max: number): number {
    if (typeof value !== 'number' || !Number.isInteger(value)) this.fail(setting, `must be a whole number, not ${describe(value)}`);
    if (value < min || value > max) this.fail(setting, `must be from ${min} to ${max}, not ${value}`);
    return value;
  }

  /**
   * A Cache-Control value every host can carry as it is: directives and numbers only, so nothing
   * in it is read as an nginx variable, an Apache expression or a second header.
   */
  cacheControl(setting: string, value: unknown): string {
    return this.pattern(setting, value, /^[A-Za-z0-9-]+(=[0-9]+)?(, *[A-Za-z0-9-]+(=[0-9]+)?)*$/, 'Cache-Control directives such as "public, max-age=900"');
  }

  boolean(setting: string, value: unknown): boolean {
    if (typeof value !== 'boolean') this.fail(setting, `must be true or false, not ${describe(value)}`);
    return value;
  }

  list(setting: string, value: unknown, each: (name: string, item: unknown) => void): void {
    if (!Array.isArray(value)) this.fail(setting, `must be a list, not ${describe(value)}`);
    value.forEach((item, i) => each(`${setting}[${i}]`, item));
  }

  httpUrl(setting: string, value: unknown, { allowPath = true }: { allowPath?: boolean } = {}): string {
    const text = this.text(setting, value, { min: 1, max: 2048 });
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      this.fail(setting, `must be an absolute http(s) URL, not ${JSON.stringify(text)}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') this.fail(setting, `must use http or https, not ${url.protocol}`);
    if (url.username || url.password) this.fail(setting, 'must not carry a user name or password');
    if (!allowPath && url.pathname !== '/') this.fail(setting, 'must not carry a path');
    if (setting === 'baseUrl' && (url.search || url.hash)) this.fail(setting, 'must not carry a query or fragment');
    return text;
  }

  template(setting: string, value: unknown, required: string[]): string {
    const text = this.text(setting, value, { min: 1, max: 2048 });
    for (const placeholder of required) {
      if (!text.includes(placeholder)) this.fail(setting, `must contain ${placeholder}`);
    }
    const unknown = text.match(/\{(?!base\}|user\}|video\}|group\}|tag\}|searchTerms\})[^}]*\}/);
    if (unknown) this.fail(setting, `has an unknown placeholder ${unknown[0]}`);
    const sample = text.replaceAll('{base}', 'http://example.org').replace(/\{[A-Za-z]+\}/g, 'x');
    this.httpUrl(setting, sample);
    return text;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return typeof value === 'object' ? 'an object' : String(value);
}
