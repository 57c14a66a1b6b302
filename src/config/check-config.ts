import { isIP } from 'node:net';
import { findNodeAtLocation, type Node as JsonNode } from 'jsonc-parser';
import { ConfigError, type ConfigProblem } from './config-error.js';
import { isObject, position, type Json } from './config-json.js';
import { describe, editDistance, pointerPath, schemaProblem, settingName, suggestion } from './config-messages.js';
import { CONFIG_SCHEMA, schemaValidator, type JsonSchema } from './config-schema.js';
import type { SiteConfig } from './site-config.js';

/**
 * Checks settings against the configuration's description (src/config/config-schema.ts) and then
 * for what a schema cannot say; every problem at once, each named with where it was given (the
 * flag, the file's line and column, or the defaults).
 */

export interface ConfigSource {
  /** The file's path, or what the settings came from. */
  name: string;
  text?: string;
  tree?: JsonNode;
  /** Found while reading it (a key given twice), reported with the rest. */
  problems?: ConfigProblem[];
}

/** Schema first (every error), then what a schema cannot say; the settings with defaults filled in. */
export function checkConfig(data: Json, source: ConfigSource, flags: ReadonlyMap<string, string>): SiteConfig {
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
