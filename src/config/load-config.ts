import { readFileSync, existsSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkConfig, type ConfigSource } from './check-config.js';
import { ConfigError } from './config-error.js';
import { isObject, parseConfigText, type Json } from './config-json.js';
import { CONFIG_SCHEMA, CONFIG_SCHEMA_FILE, DEFAULT_BASE_URL, type JsonSchema } from './config-schema.js';
import { takeRunSettings, type RunSettings } from './run-settings.js';
import type { SiteConfig } from './site-config.js';

export const DEFAULT_CONFIG_FILE = 'vidfeeds.config.json';

/** A setting given by a flag, which is blamed for its value instead of the file. */
export interface ConfigOverride {
  flag: string;
  value: unknown;
}

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
      throw new ConfigError([{ where: file, setting: '', problem: code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? String(error)})` }], error);
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
  // A relative path in a file (the templates directory, the sync's password file) means a place
  // beside that file, wherever vidfeeds runs from (a cron job's working directory is rarely the site's).
  const written = fromFile as { player?: { templatesDir?: unknown }; sync?: { passwordFile?: unknown } };
  const templatesDir = written.player?.templatesDir;
  if (typeof templatesDir === 'string' && config.player.templatesDir === templatesDir) {
    config.player.templatesDir = resolve(dirname(file), templatesDir);
  }
  const passwordFile = written.sync?.passwordFile;
  if (typeof passwordFile === 'string' && config.sync.passwordFile === passwordFile) {
    config.sync.passwordFile = resolve(dirname(file), passwordFile);
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
  // The default description names the demo site; with the site's name given, it names that.
  if (overrides.siteName?.value !== undefined) config.siteDescription = `Videos shared by the people of ${config.siteName}.`;
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
