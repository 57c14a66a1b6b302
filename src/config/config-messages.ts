import type { ErrorObject } from 'ajv';
import { CONFIG_SCHEMA, type JsonSchema } from './config-schema.js';
import { quoted } from './shown-text.js';

/**
 * Configuration problems in words: a setting's name as a user writes it (`player.width`), what a
 * schema error means with the value found, and "did you mean" for a misspelt name.
 */

export function pointerPath(pointer: string): string[] {
  return pointer === '' ? [] : pointer.slice(1).split('/').map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** `player.width`, `robots.disallow[0]`. */
export function settingName(path: readonly string[]): string {
  return path.reduce((name, part) => (/^\d+$/.test(part) ? `${name}[${part}]` : name ? `${name}.${part}` : part), '');
}

/** At most this many allowed values are printed in a message. */
const LISTED_VALUES = 20;

/** What an ajv error means, in words, with the value found. */
export function schemaProblem(error: ErrorObject): string {
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
      // A long list (Apple's podcast categories) is named, not printed whole.
      const list = allowed.length > LISTED_VALUES ? `the ${allowed.length} values the schema lists (docs/configuration.md)` : allowed.map((v) => JSON.stringify(v)).join(', ');
      return `must be one of ${list}, not ${found}${near === undefined ? '' : `; did you mean ${JSON.stringify(near)}?`}`;
    }
    case 'pattern': {
      const placeholder = /^\\\{(\w+)\\\}$/.exec(schema.pattern ?? '');
      if (placeholder) return `must contain {${placeholder[1]}}, not ${found}`;
      // The schema's `title` of a value with a pattern says what the pattern wants, in words.
      if (typeof schema.title === 'string') return `must be ${schema.title}, not ${found}`;
      const examples = (schema.examples ?? []).filter((e) => e !== '').map((e) => JSON.stringify(e));
      return `must match ${schema.pattern}${examples.length > 0 ? ` (such as ${examples.join(' or ')})` : ''}, not ${found}`;
    }
    case 'required':
      return `must set ${(error.params as { missingProperty: string }).missingProperty}`;
    case 'anyOf':
      return `must be ${(schema.anyOf ?? []).map(branchWords).join(' or ')}, not ${found}`;
    default:
      return `${error.message ?? 'is not valid'}, not ${found}`;
  }
}

/** One branch of an anyOf in words: its constant, a URL, what its `title` says its pattern wants, or its type. */
function branchWords(branch: JsonSchema): string {
  if (branch.const !== undefined) return JSON.stringify(branch.const);
  if (branch.format === 'uri') return 'an absolute http(s) URL';
  if (typeof branch.title === 'string') return branch.title;
  return typeWords(branch.type);
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
export function suggestion(key: string, path: readonly string[]): string {
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

export function editDistance(a: string, b: string): number {
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

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') return quoted(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return typeof value === 'object' ? 'an object' : String(value);
}
