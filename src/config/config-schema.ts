import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { takeRunSettings } from './run-settings.js';
import type { SiteConfig } from './site-config.js';

/**
 * The configuration's one description: types, limits, defaults and the text editors show, in
 * `schemas/vidfeeds.config.schema.json` (shipped in the package; a config file may name it in
 * `$schema`). vidfeeds validates with it at run time; what a schema cannot say (a URL's parts, a
 * page template's placeholders, control characters) is checked after it (check-config.ts).
 *
 * To add a setting: one property in the schema with its type, limits, `default` and
 * `description` (a `title` saying in words what a `pattern` wants; `format: "uri"` for an
 * http(s) URL, which then gets the URL checks of check-config.ts), and the field in `SiteConfig`
 * (site-config.ts) for the code that reads it. Defaults, unknown-key errors, "did you mean",
 * positions and editors follow.
 */
export const CONFIG_SCHEMA_FILE = resolve(import.meta.dirname, '../../schemas/vidfeeds.config.schema.json');

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
export function schemaValidator(): ValidateFunction {
  if (compiled === undefined) {
    // `uri` and `uri-template` are checked below with messages that say what is wrong; for ajv
    // they are names only. Every command pays this compile at start, so it leaves out the two
    // costliest parts it does not need: the check against the meta-schema (the tests make it once)
    // and the optimiser (the validator runs on one small object).
    const ajv = new Ajv({
      strict: true,
      allErrors: true,
      useDefaults: true,
      verbose: true,
      formats: { uri: true, 'uri-template': true },
      validateSchema: false,
      code: { optimize: false },
    });
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
