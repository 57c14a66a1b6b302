import { readFileSync, existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { findNodeAtLocation, getNodeValue, parseTree, ParseErrorCode, printParseErrorCode, type Node as JsonNode, type ParseError } from 'jsonc-parser';
import { ConfigError, type ConfigProblem } from './config-error.js';
import { takeRunSettings, type RunSettings } from './run-settings.js';

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
  /** Site logo (RSS channel image, OpenSearch `Image`). */
  logoUrl: string;
  /**
   * The logo's size in pixels and media type, all three or none. The OpenSearch `Image` is
   * written only when they are known: feed validators require its height, width and type.
   */
  logoWidth: number | null;
  logoHeight: number | null;
  logoType: string | null;
  /** URL templates of the site's own pages, which our documents link to. */
  pages: PageTemplates;
  /** Number of recommendations in `/<user>/openrecommender/`. */
  recommendationsCount: number;
  /** The recommendation submit (POST and `vidfeeds recommend`): moderation and limits. */
  recommendationSubmit: RecommendationSubmitConfig;
  crossDomain: CrossDomainConfig;
  robots: RobotsConfig;
  player: PlayerConfig;
  /** Make an unpublishable row (a bad name) fatal instead of reported and skipped. */
  strict: boolean;
  /** A lock held longer than this is reported as stale (src/pipeline/lock.ts). */
  maxLockAgeSeconds: number;
  /** Pre-compressed forms written beside each text document (`.gz`, `.br`); none by default. */
  compress: Array<'gzip' | 'br'>;
  cacheControl: CacheControlConfig;
  /** WebSub hubs the feeds name and that are notified of changed feeds (docs/deploy.md). */
  websub: WebSubConfig;
  /** IndexNow: the key file in the tree and the submission of changed URLs. */
  indexNow: IndexNowConfig;
  /** Whether hubs and IndexNow hear of changes after a build (the tree is served) or after `vidfeeds deploy`. */
  notifyAfter: 'build' | 'deploy';
  /** `vidfeeds sync`: the site's own database and how its rows map to vidfeeds's tables. */
  sync: SyncConfig;
}

export interface WebSubConfig {
  /** Hub URLs; empty for none. */
  hubs: string[];
  /** Feeds named in one publish request (repeated `hub.url`). */
  feedsPerRequest: number;
}

export interface IndexNowConfig {
  /** The site's key (8 to 128 of `[A-Za-z0-9-]`), or null: no key file, no submissions. */
  key: string | null;
  endpoint: string;
}

/** Where `vidfeeds sync` reads from and, per vidfeeds table, the query that maps it (docs/adopting.md). */
export interface SyncConfig {
  /** The source's URL (mysql:, mariadb:, postgres:, postgresql:, sqlite:); `--from` wins. */
  from: string | null;
  /** An environment variable holding the URL, read by the command line when `from` is null. */
  fromEnv: string | null;
  /** A file holding the source's password. */
  passwordFile: string | null;
  /** Per vidfeeds table, its SELECT (a string, or an array of lines) or the SELECT with options. */
  tables: Record<string, string | string[] | SyncTableConfig>;
}

export interface SyncTableConfig {
  query: string | string[];
  /** Text columns whose HTML character references are decoded. */
  decodeEntities?: string[];
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
  /**
   * Page of a video: RSS and XSPF links, oEmbed `web_page`, and what oEmbed's `url` parameter
   * accepts. Placeholders: {base}, {video}. By default the player markup vidfeeds publishes
   * (`/<video>/oembed/html`), which every host configuration serves.
   */
  video: string;
  /** Page of a group. Placeholders: {base}, {group}. */
  group: string;
  /** Page listing a tag's videos. Placeholders: {base}, {tag}. */
  tag: string;
  /** The site's search, as an OpenSearch template. Placeholders: {base}, {searchTerms} (kept for clients). */
  search: string;
}

/** At most `limit` submissions in any `windowSeconds`, and at most `maxPending` awaiting moderation. */
export interface SubmitLimit {
  limit: number;
  windowSeconds: number;
  maxPending: number;
}

export interface RecommendationSubmitConfig {
  /** Publish submissions at once (status `approved`) instead of holding them for moderation. */
  publishAtOnce: boolean;
  /** Hosts (or `*.example.org` suffixes) a submitted link and image may point at. Empty: any host. */
  allowedHosts: string[];
  /** Per client address (the POST only; the command line has none). */
  perClient: SubmitLimit;
  /** Per user whose list receives them. */
  perUser: SubmitLimit;
  /**
   * Addresses (or CIDR ranges) of proxies whose X-Forwarded-For `vidfeeds serve` believes; a
   * request from any other address is counted under the address it comes from.
   */
  trustedProxies: string[];
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
  /**
   * Name of the embed template in the templates directory: `html5` (the default, a `<video>` that
   * plays in current browsers) or `flash` (the seed's object/embed) ship with vidfeeds.
   */
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
  /**
   * The HTML5 player asks for the video and captions with CORS (`crossorigin="anonymous"`), which a
   * `<track>` on another host than the embedding page needs, and which fails unless the hosts of
   * the files send `Access-Control-Allow-Origin`. Off by default, so a host without CORS still plays.
   */
  crossOrigin: boolean;
  backColor: string;
  frontColor: string;
  lightColor: string;
  bgColor: string;
}

/**
 * The configuration's one description: types, limits, defaults and the text editors show, in
 * `schemas/vidfeeds.config.schema.json` (shipped in the package; a config file may name it in
 * `$schema`). vidfeeds validates with it at run time; what a schema cannot say (a URL's parts, a
 * page template's placeholders, control characters) is checked below, after it.
 *
 * To add a setting: one property in the schema with its type, limits, `default` and
 * `description` (a `title` saying in words what a `pattern` wants; `format: "uri"` for an
 * http(s) URL, which then gets the URL checks here), and the field in `SiteConfig` for the code
 * that reads it. Defaults, unknown-key errors, "did you mean", positions and editors follow.
 */
export const CONFIG_SCHEMA_FILE = resolve(import.meta.dirname, '../../schemas/vidfeeds.config.schema.json');

export const DEFAULT_CONFIG_FILE = 'vidfeeds.config.json';

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  propertyNames?: JsonSchema;
  anyOf?: JsonSchema[];
  format?: string;
  pattern?: string;
  examples?: unknown[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  enum?: unknown[];
  const?: unknown;
  [keyword: string]: unknown;
}

export const CONFIG_SCHEMA = JSON.parse(readFileSync(CONFIG_SCHEMA_FILE, 'utf8')) as JsonSchema;

let compiled: ValidateFunction | undefined;

/** The schema compiled once: every error at once, defaults filled in, errors carrying their schema and value. */
function schemaValidator(): ValidateFunction {
  if (compiled === undefined) {
    // `uri` and `uri-template` are checked below with messages that say what is wrong; for ajv
    // they are names only.
    const ajv = new Ajv({ strict: true, allErrors: true, useDefaults: true, verbose: true, formats: { uri: true, 'uri-template': true } });
    compiled = ajv.compile(CONFIG_SCHEMA);
  }
  return compiled;
}

/** Every site setting at its default: the schema's defaults. */
export const DEFAULT_CONFIG: SiteConfig = (() => {
  const config = {};
  schemaValidator()(config);
  takeRunSettings(config, null);
  return config as SiteConfig;
})();

export const DEFAULT_BASE_URL = DEFAULT_CONFIG.baseUrl;

// In a module of their own, so the threads that only report configuration errors (the build's,
// render threads) do not load ajv and the schema with this module.
export { ConfigError, type ConfigProblem } from './config-error.js';

/** A setting given by a flag, which is blamed for its value instead of the file. */
export interface ConfigOverride {
  flag: string;
  value: unknown;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Reads the configuration: the file (the default file only if it exists; a file named with
 * --config must exist), then flags, which win, then the schema's defaults for the rest. Unknown
 * keys are errors, so a typo never passes silently. Every problem is reported at once.
 */
export function loadConfig(options: LoadOptions): SiteConfig {
  return loadSettings(options).site;
}

export interface LoadOptions {
  configFile?: string;
  overrides?: Record<string, ConfigOverride | undefined>;
  cwd?: string;
}

/** The site's settings and the run settings (src/config/run-settings.ts) of one configuration, read and checked together. */
export function loadSettings(options: LoadOptions): { site: SiteConfig; run: RunSettings; file: string | null } {
  const cwd = options.cwd ?? process.cwd();
  const named = options.configFile !== undefined;
  const file = resolve(cwd, options.configFile ?? DEFAULT_CONFIG_FILE);
  let source: ConfigSource = { name: 'defaults' };
  let data: Json = {};
  if (named || existsSync(file)) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new ConfigError([{ where: file, setting: '', problem: code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? String(error)})` }]);
    }
    // A byte order mark, as some Windows editors write, is no part of the JSON.
    text = text.replace(/^\uFEFF/, '');
    if (text.trim() === '') throw new ConfigError([{ where: file, setting: '', problem: 'is empty: write {} for every default' }]);
    const parsed = parseConfigText(text, file);
    if (parsed.syntax.length > 0) throw new ConfigError(parsed.syntax);
    source = { name: file, text, tree: parsed.tree, problems: parsed.duplicates };
    data = parsed.value;
  }
  const fromFile = structuredClone(data);
  const flags = applyOverrides(data, options.overrides ?? {});
  const config = checkConfig(data, source, flags);
  // A relative templates directory in a file means a folder beside that file, wherever vidfeeds
  // runs from (a cron job's working directory is rarely the site's).
  const templatesDir = (fromFile as { player?: { templatesDir?: unknown } }).player?.templatesDir;
  if (typeof templatesDir === 'string' && config.player.templatesDir === templatesDir) {
    config.player.templatesDir = resolve(dirname(file), templatesDir);
  }
  const read = source.name === 'defaults' ? null : file;
  const run = takeRunSettings(config as unknown as Record<string, unknown>, read);
  return { site: config, run, file: read };
}

/**
 * The URL settings still at a default on the preview address `http://localhost:8080` (baseUrl,
 * logoUrl, player.playerUrl): a real site publishing them links to the reader's own machine.
 */
export function previewUrlSettings(config: SiteConfig): string[] {
  const found: string[] = [];
  const walk = (schema: JsonSchema, value: unknown, path: string[]) => {
    if (typeof schema.default === 'string' && schema.default.startsWith(DEFAULT_BASE_URL) && value === schema.default) found.push(path.join('.'));
    for (const [key, child] of Object.entries(schema.properties ?? {})) {
      if (typeof value === 'object' && value !== null) walk(child, (value as Record<string, unknown>)[key], [...path, key]);
    }
  };
  walk(CONFIG_SCHEMA, config, []);
  return found;
}

/**
 * A starter configuration file's text: every setting at its default (or a flag's value), with
 * `$schema` pointing from where the file will be to the schema shipped with vidfeeds, for editors.
 */
export function starterConfigText(file: string, overrides: Record<string, ConfigOverride | undefined> = {}): string {
  const data: Json = {};
  const config = checkConfig(data, { name: 'defaults' }, applyOverrides(data, overrides));
  // The other URLs whose defaults live on the default base URL (the logo, the player) move to the one given.
  if (config.baseUrl !== DEFAULT_BASE_URL) {
    for (const setting of previewUrlSettings(config)) {
      const path = setting.split('.');
      const parent = path.slice(0, -1).reduce((node, key) => node[key] as Record<string, unknown>, config as unknown as Record<string, unknown>);
      const key = path[path.length - 1]!;
      parent[key] = config.baseUrl + (parent[key] as string).slice(DEFAULT_BASE_URL.length);
    }
  }
  // Relative where vidfeeds is installed below the file (./node_modules/vidfeeds/…), else a file URL.
  const below = relative(dirname(file), CONFIG_SCHEMA_FILE);
  const schema = below.startsWith('..') || isAbsolute(below) ? pathToFileURL(CONFIG_SCHEMA_FILE).href : `./${below.split(sep).join('/')}`;
  return `${JSON.stringify({ $schema: schema, ...config }, null, 2)}\n`;
}

/**
 * Puts the flags' values into the settings (`player.template` into `player`), and returns which
 * flag set which setting (as a JSON pointer), so that a bad value is blamed on its flag.
 */
function applyOverrides(data: Json, overrides: Record<string, ConfigOverride | undefined>): Map<string, string> {
  const flags = new Map<string, string>();
  for (const [setting, override] of Object.entries(overrides)) {
    if (override === undefined || override.value === undefined) continue;
    const path = setting.split('.');
    let node = data;
    for (const part of path.slice(0, -1)) {
      if (!isObject(node)) break;
      if (node[part] === undefined) node[part] = {};
      node = node[part]!;
    }
    // A file whose settings are not an object is reported as such; the flag has nowhere to go.
    if (!isObject(node)) continue;
    node[path[path.length - 1]!] = override.value as Json;
    flags.set(`/${path.join('/')}`, override.flag);
  }
  return flags;
}

/** Checks settings given as an object (tests, callers with their own source): defaults filled in, every problem at once. */
export function validateConfig(raw: unknown, source = 'settings'): SiteConfig {
  const config = checkConfig(structuredClone(raw) as Json, { name: source }, new Map());
  takeRunSettings(config as unknown as Record<string, unknown>, null);
  return config;
}

interface ConfigSource {
  /** The file's path, or what the settings came from. */
  name: string;
  text?: string;
  tree?: JsonNode;
  /** Found while reading it (a key given twice), reported with the rest. */
  problems?: ConfigProblem[];
}

/** The file's JSON with every syntax error (not only the first) and every key given twice, each with its line and column. */
function parseConfigText(text: string, file: string): { value: Json; tree: JsonNode | undefined; syntax: ConfigProblem[]; duplicates: ConfigProblem[] } {
  const errors: ParseError[] = [];
  const tree = parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  // One mistake can raise several errors at one place (a trailing comma: no key, no value): the first says it.
  const syntax = errors
    .filter((e, i) => i === 0 || e.offset !== errors[i - 1]!.offset)
    .map((e) => ({ where: `${file}:${position(text, e.offset)}`, setting: '', problem: `is not valid JSON: ${syntaxProblem(e.error)}` }));
  const problems: ConfigProblem[] = [];
  if (tree === undefined || syntax.length > 0) return { value: {}, tree, syntax, duplicates: problems };
  const duplicates = (node: JsonNode, path: string[]) => {
    if (node.type === 'object') {
      const seen = new Map<string, JsonNode>();
      for (const property of [...(node.children ?? [])]) {
        const [key, value] = property.children ?? [];
        if (key === undefined) continue;
        const name = String(key.value);
        const first = seen.get(name);
        if (first !== undefined) {
          // The last one is the value (as JSON.parse has it), so the first leaves the tree that positions are found in.
          node.children!.splice(node.children!.indexOf(first.parent!), 1);
          problems.push({
            where: `${file}:${position(text, key.offset)}`,
            setting: settingName([...path, name]),
            problem: `is given twice (first at line ${position(text, first.offset).split(':')[0]})`,
          });
        }
        seen.set(name, key);
        if (value !== undefined) duplicates(value, [...path, name]);
      }
    } else if (node.type === 'array') {
      (node.children ?? []).forEach((child, i) => duplicates(child, [...path, String(i)]));
    }
  };
  duplicates(tree, []);
  return { value: getNodeValue(tree) as Json, tree, syntax, duplicates: problems };
}

function syntaxProblem(code: ParseErrorCode): string {
  const words: Partial<Record<ParseErrorCode, string>> = {
    [ParseErrorCode.InvalidSymbol]: 'unexpected character',
    [ParseErrorCode.InvalidNumberFormat]: 'a badly written number',
    [ParseErrorCode.PropertyNameExpected]: 'a key in double quotes expected (a comma too many?)',
    [ParseErrorCode.ValueExpected]: 'a value expected',
    [ParseErrorCode.ColonExpected]: 'a colon expected',
    [ParseErrorCode.CommaExpected]: 'a comma expected',
    [ParseErrorCode.CloseBraceExpected]: '} expected',
    [ParseErrorCode.CloseBracketExpected]: '] expected',
    [ParseErrorCode.EndOfFileExpected]: 'nothing more expected',
    [ParseErrorCode.InvalidCommentToken]: 'JSON has no comments',
    [ParseErrorCode.UnexpectedEndOfComment]: 'JSON has no comments',
    [ParseErrorCode.UnexpectedEndOfString]: 'the string never ends',
    [ParseErrorCode.UnexpectedEndOfNumber]: 'the number never ends',
    [ParseErrorCode.InvalidUnicode]: 'a bad \\u escape',
    [ParseErrorCode.InvalidEscapeCharacter]: 'a bad escape',
    [ParseErrorCode.InvalidCharacter]: 'a character that must be escaped in a string',
  };
  return words[code] ?? printParseErrorCode(code);
}

/** `line:column`, both from 1, of an offset in the text. */
function position(text: string, offset: number): string {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return `${line}:${offset - start + 1}`;
}

function isObject(value: Json | undefined): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Schema first (every error), then what a schema cannot say; the settings with defaults filled in. */
function checkConfig(data: Json, source: ConfigSource, flags: ReadonlyMap<string, string>): SiteConfig {
  const validate = schemaValidator();
  const problems: ConfigProblem[] = [...(source.problems ?? [])];
  const blamed = new Set<string>();
  const report = (path: string[], setting: string, problem: string, { atKey = false } = {}) => {
    blamed.add(path.join('/'));
    // A flag's own value is named by the flag alone.
    problems.push({ where: whereIs(path, source, flags, atKey), setting: flags.has(`/${path.join('/')}`) ? '' : setting, problem });
  };
  if (!validate(data)) {
    for (const error of validate.errors ?? []) {
      // The branches of an anyOf explain themselves badly: the anyOf error speaks for them.
      if (/\/anyOf\/\d+\//.test(error.schemaPath)) continue;
      const path = pointerPath(error.instancePath);
      // A key of an open map (cacheControl.formats) that is not one of its names: the inner error
      // names the key; the outer `propertyNames` one only repeats it.
      if (error.keyword === 'propertyNames') continue;
      if (error.propertyName !== undefined) {
        const at = [...path, error.propertyName];
        const names = ((error.parentSchema as JsonSchema | undefined)?.enum ?? []).map(String);
        const near = names.find((name) => editDistance(name.toLowerCase(), error.propertyName!.toLowerCase()) <= Math.max(1, Math.floor(name.length / 3)));
        const hint = near === undefined ? '' : `; did you mean ${JSON.stringify(near)}?`;
        report(at, settingName(at), `is not ${(error.parentSchema as JsonSchema | undefined)?.title ?? 'a known name'}; known: ${names.join(', ')}${hint}`, { atKey: true });
        continue;
      }
      if (error.keyword === 'additionalProperties') {
        const key = (error.params as { additionalProperty: string }).additionalProperty;
        const at = [...path, key];
        report(at, settingName(at), `is not a known setting${suggestion(key, path)}`, { atKey: true });
        continue;
      }
      report(path, settingName(path) || '(the file)', schemaProblem(error));
    }
  }
  if (isObject(data)) {
    semanticChecks(data, CONFIG_SCHEMA, [], blamed, report);
    relationChecks(data, blamed, report);
  }
  if (problems.length > 0) throw new ConfigError(problems.sort(byPlace));
  const config = data as unknown as SiteConfig & { $schema?: string };
  delete config.$schema;
  config.baseUrl = config.baseUrl.replace(/\/+$/, '');
  config.recommendationSubmit.allowedHosts = config.recommendationSubmit.allowedHosts.map((host) => host.toLowerCase());
  return config;
}

/** In the order of the file, then the flags. */
function byPlace(a: ConfigProblem, b: ConfigProblem): number {
  const place = (p: ConfigProblem) => /:(\d+):(\d+)$/.exec(p.where)?.slice(1).map(Number) ?? [Infinity, 0];
  const [la, ca] = place(a);
  const [lb, cb] = place(b);
  return la! - lb! || ca! - cb!;
}

/** Where a setting was given: the flag that set it, its line and column in the file, or the defaults. */
function whereIs(path: string[], source: ConfigSource, flags: ReadonlyMap<string, string>, atKey: boolean): string {
  for (let n = path.length; n > 0; n--) {
    const flag = flags.get(`/${path.slice(0, n).join('/')}`);
    if (flag !== undefined) return flag;
  }
  if (source.tree === undefined || source.text === undefined) return source.name;
  // The value itself, or its key for a key the schema does not know.
  const node = findNodeAtLocation(source.tree, path.map((s) => (/^\d+$/.test(s) ? Number(s) : s)));
  if (node === undefined) return source.name;
  const key = atKey && node.parent?.type === 'property' ? node.parent.children?.[0] : undefined;
  return `${source.name}:${position(source.text, (key ?? node).offset)}`;
}

function pointerPath(pointer: string): string[] {
  return pointer === '' ? [] : pointer.slice(1).split('/').map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** `player.width`, `robots.disallow[0]`. */
function settingName(path: readonly string[]): string {
  return path.reduce((name, part) => (/^\d+$/.test(part) ? `${name}[${part}]` : name ? `${name}.${part}` : part), '');
}

/** What an ajv error means, in words, with the value found. */
function schemaProblem(error: ErrorObject): string {
  const schema = (error.parentSchema ?? {}) as JsonSchema;
  const found = describe(error.data);
  switch (error.keyword) {
    case 'type':
      return `must be ${typeWords(schema.type)}, not ${found}`;
    case 'minLength':
      return (error.params as { limit: number }).limit === 1 ? 'must not be empty' : `must be at least ${(error.params as { limit: number }).limit} characters`;
    case 'maxLength':
      return `must be at most ${(error.params as { limit: number }).limit} characters`;
    case 'minimum':
    case 'maximum':
      return schema.minimum !== undefined && schema.maximum !== undefined
        ? `must be from ${schema.minimum} to ${schema.maximum}, not ${found}`
        : `must be ${error.keyword === 'minimum' ? 'at least' : 'at most'} ${(error.params as { limit: number }).limit}, not ${found}`;
    case 'uniqueItems': {
      const { j } = error.params as { i: number; j: number };
      return `names ${describe((error.data as unknown[])[j])} twice`;
    }
    case 'enum': {
      const allowed = schema.enum ?? [];
      const near = typeof error.data === 'string' ? allowed.find((v) => typeof v === 'string' && editDistance(v.toLowerCase(), (error.data as string).toLowerCase()) <= Math.max(1, Math.floor(v.length / 3))) : undefined;
      return `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}, not ${found}${near === undefined ? '' : `; did you mean ${JSON.stringify(near)}?`}`;
    }
    case 'pattern': {
      const placeholder = /^\\\{(\w+)\\\}$/.exec(schema.pattern ?? '');
      if (placeholder) return `must contain {${placeholder[1]}}, not ${found}`;
      // The schema's `title` of a value with a pattern says what the pattern wants, in words.
      if (typeof schema.title === 'string') return `must be ${schema.title}, not ${found}`;
      const examples = (schema.examples ?? []).filter((e) => e !== '').map((e) => JSON.stringify(e));
      return `must match ${schema.pattern}${examples.length > 0 ? ` (such as ${examples.join(' or ')})` : ''}, not ${found}`;
    }
    case 'anyOf':
      return `must be ${(schema.anyOf ?? []).map((branch) => (branch.const !== undefined ? `${JSON.stringify(branch.const)}` : branch.format === 'uri' ? 'an absolute http(s) URL' : 'of another form')).join(' or ')}, not ${found}`;
    default:
      return `${error.message ?? 'is not valid'}, not ${found}`;
  }
}

function typeWords(type: string | string[] | undefined): string {
  const words: Record<string, string> = {
    string: 'a string',
    integer: 'a whole number',
    number: 'a number',
    boolean: 'true or false',
    object: 'an object',
    array: 'a list',
    null: 'null',
  };
  return [type ?? []].flat().map((t) => words[t] ?? t).join(' or ');
}

/** "; did you mean baseUrl?" for a misspelt key, or where a key of another object belongs. */
function suggestion(key: string, path: readonly string[]): string {
  const here = schemaAt(CONFIG_SCHEMA, path)?.properties ?? {};
  const near = Object.keys(here)
    .map((name) => ({ name, distance: editDistance(key.toLowerCase(), name.toLowerCase()) }))
    .filter(({ name, distance }) => distance <= Math.max(1, Math.floor(name.length / 3)))
    .sort((a, b) => a.distance - b.distance)[0];
  if (near !== undefined) return `; did you mean ${settingName([...path, near.name])}?`;
  const elsewhere = settingPaths(CONFIG_SCHEMA, []).filter((p) => p[p.length - 1]!.toLowerCase() === key.toLowerCase());
  if (elsewhere.length > 0) return `; did you mean ${elsewhere.map((p) => settingName(p)).join(' or ')}?`;
  return '';
}

function schemaAt(schema: JsonSchema, path: readonly string[]): JsonSchema | undefined {
  let node: JsonSchema | undefined = schema;
  for (const part of path) node = /^\d+$/.test(part) ? node?.items : node?.properties?.[part];
  return node;
}

function settingPaths(schema: JsonSchema, path: string[]): string[][] {
  return Object.entries(schema.properties ?? {}).flatMap(([name, child]) => [[...path, name], ...settingPaths(child, [...path, name])]);
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  let beforePrevious = previous;
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      // Two letters swapped is one slip, not two.
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) current[j] = Math.min(current[j]!, beforePrevious[j - 2]! + 1);
    }
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length]!;
}

type Report = (pointer: string[], setting: string, problem: string) => void;

/**
 * What the schema cannot say, for values it passed: no control characters in any text; a `uri`
 * is an absolute http(s) URL without credentials (the base URL also without query or fragment);
 * a `uri-template` uses only the placeholders vidfeeds knows and makes a URL.
 */
function semanticChecks(value: Json, schema: JsonSchema, path: string[], blamed: ReadonlySet<string>, report: Report): void {
  if (blamed.has(path.join('/'))) return;
  if (Array.isArray(value)) {
    value.forEach((item, i) => schema.items && semanticChecks(item, schema.items, [...path, String(i)], blamed, report));
    return;
  }
  if (isObject(value)) {
    for (const [key, child] of Object.entries(value)) {
      const childSchema = schema.properties?.[key];
      if (childSchema !== undefined) semanticChecks(child, childSchema, [...path, key], blamed, report);
    }
    return;
  }
  if (typeof value !== 'string') return;
  const setting = settingName(path);
  const fail = (problem: string) => report(path, setting, problem);
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(value)) return fail('must not contain control characters');
  const format = schema.format ?? schema.anyOf?.find((branch) => branch.format !== undefined)?.format;
  const emptyAllowed = schema.anyOf?.some((branch) => branch.const === '') ?? false;
  if (format === 'uri' && !(emptyAllowed && value === '')) {
    const problem = httpUrlProblem(value);
    if (problem !== undefined) return fail(problem);
    const url = new URL(value);
    if (path.length === 1 && path[0] === 'baseUrl' && (url.search || url.hash)) return fail('must not carry a query or fragment');
  }
  if (format === 'uri-template') {
    const unknown = value.match(/\{(?!base\}|user\}|video\}|group\}|tag\}|searchTerms\})[^}]*\}/);
    if (unknown) return fail(`has an unknown placeholder ${unknown[0]} (known: {base}, {user}, {video}, {group}, {tag}, {searchTerms})`);
    const sample = value.replaceAll('{base}', 'http://example.org').replace(/\{[A-Za-z]+\}/g, 'x');
    const problem = httpUrlProblem(sample);
    if (problem !== undefined) return fail(`${problem.replace(/, not .*$/, '')} once {base} is put in, not ${describe(value)}`);
  }
}

/**
 * What no one value says alone, for values the schema passed: the logo's size and type go
 * together (OpenSearch's Image needs all three) and with a logo; a trusted proxy is an address or
 * a CIDR range.
 */
function relationChecks(data: { [key: string]: Json }, blamed: ReadonlySet<string>, report: Report): void {
  const logo = ['logoWidth', 'logoHeight', 'logoType'] as const;
  if (!logo.some((key) => blamed.has(key))) {
    const given = logo.filter((key) => data[key] !== undefined && data[key] !== null);
    if (given.length !== 0 && given.length !== logo.length) {
      report([given[0]!], logo.join('/'), 'go together: set all three, or none (null)');
    } else if (given.length === logo.length && (data.logoUrl === '' || blamed.has('logoUrl'))) {
      report(['logoUrl'], 'logoUrl', 'must be set when logoWidth, logoHeight and logoType are (or set those to null)');
    }
  }
  const submit = data.recommendationSubmit;
  const proxies = isObject(submit) ? submit.trustedProxies : undefined;
  if (Array.isArray(proxies)) {
    proxies.forEach((value, i) => {
      const path = ['recommendationSubmit', 'trustedProxies', String(i)];
      if (typeof value !== 'string' || blamed.has(path.join('/'))) return;
      const [address = '', bits, ...rest] = value.split('/');
      const family = isIP(address);
      const max = family === 6 ? 128 : 32;
      if (family === 0 || rest.length > 0 || (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > max))) {
        report(path, settingName(path), `must be an IP address or a CIDR range such as 10.0.0.0/8, not ${describe(value)}`);
      }
    });
  }
}

function httpUrlProblem(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `must be an absolute http(s) URL, not ${describe(text)}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must use http or https, not ${url.protocol}`;
  if (url.username || url.password) return 'must not carry a user name or password';
  return undefined;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return typeof value === 'object' ? 'an object' : String(value);
}
