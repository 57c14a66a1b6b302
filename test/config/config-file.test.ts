import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.js';
import { CONFIG_SCHEMA, CONFIG_SCHEMA_FILE, DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import { loadConfig } from '../../src/config/load-config.js';
import { ALL_ENCODINGS } from '../../src/paths/compression.js';
import { FORMATS } from '../../src/formats/registry.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';


const REPO = join(import.meta.dirname, '../..');

/** The problems loadConfig reports for this file text (and flags), as `line:col: message` or `--flag: message`. */
function problemsOf(text: string, overrides: Record<string, { flag: string; value: unknown }> = {}): string[] {
  const { dir } = tempDir('vidfeeds-config-');
  writeFileSync(join(dir, 'site.json'), text);
  try {
    loadConfig({ configFile: 'site.json', cwd: dir, overrides });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems.map((p) => `${p.where.replace(join(dir, 'site.json'), '')}: ${p.setting ? `${p.setting} ` : ''}${p.problem}`);
  }
  throw new Error('the configuration was accepted');
}

/** The example configuration of docs/configuration.md. */
function documentedExample(): string {
  const page = readFileSync(join(REPO, 'docs', 'configuration.md'), 'utf8');
  return /```json\n([\s\S]*?)```/.exec(page)![1]!;
}

describe('the configuration schema', () => {
  it('is shipped in the package and compiles in ajv in strict mode, with the formats it names', () => {
    expect(CONFIG_SCHEMA_FILE).toBe(join(REPO, 'schemas', 'vidfeeds.config.schema.json'));
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { files?: string[]; dependencies: Record<string, string> };
    if (pkg.files !== undefined) expect(pkg.files).toContain('schemas/');
    expect(Object.keys(pkg.dependencies)).toEqual(expect.arrayContaining(['ajv', 'jsonc-parser']));
    const ajv = new Ajv({ strict: true, allErrors: true });
    addFormats.default(ajv);
    const validate = ajv.compile(JSON.parse(readFileSync(CONFIG_SCHEMA_FILE, 'utf8')));
    // An editor validating with it: the documented example and the defaults pass, a misspelt key and a bad colour do not.
    expect(validate(JSON.parse(documentedExample())), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ $schema: './node_modules/vidfeeds/schemas/vidfeeds.config.schema.json', ...DEFAULT_CONFIG })).toBe(true);
    expect(validate({ baseUrl: 'https://example.org', bsaeUrl: 'x' })).toBe(false);
    expect(validate({ player: { backColor: 'red' } })).toBe(false);
  });

  it('is a valid draft-07 schema for an independent validator (Python jsonschema)', () => {
    const check = spawnSync(
      '/usr/bin/python3',
      ['-c', 'import json, sys, jsonschema; s = json.load(open(sys.argv[1])); jsonschema.Draft7Validator.check_schema(s); jsonschema.Draft7Validator(s).validate(json.loads(sys.argv[2])); print("ok")', CONFIG_SCHEMA_FILE, documentedExample()],
      { encoding: 'utf8' },
    );
    if (check.error || /No module named/.test(check.stderr)) {
      console.warn('skipped: python3-jsonschema is not installed (.ci/run installs it)');
      return;
    }
    expect(check.stdout.trim(), check.stderr).toBe('ok');
  });

  it('gives every setting a default (but those its object requires) and a description, and the defaults are what vidfeeds uses', () => {
    const missing: string[] = [];
    const walk = (schema: typeof CONFIG_SCHEMA, path: string) => {
      const required = (schema.required ?? []) as string[];
      for (const [name, child] of Object.entries(schema.properties ?? {})) {
        if (name === '$schema') continue;
        if ((child.default === undefined && !required.includes(name)) || typeof child.description !== 'string') missing.push(`${path}${name}`);
        walk(child, `${path}${name}.`);
      }
    };
    walk(CONFIG_SCHEMA, '');
    expect(missing).toEqual([]);
    expect(DEFAULT_CONFIG).toMatchObject({ baseUrl: 'http://localhost:8080', recommendationsCount: 8, player: { template: 'html5', width: 400 } });
    expect(loadConfig({ cwd: tempDir().dir })).toEqual(DEFAULT_CONFIG);
  });
});

describe('the names the schema lists', () => {
  it('are the format table\'s names and the encodings the build writes, so neither drifts from the code', () => {
    const properties = CONFIG_SCHEMA.properties!;
    const formats = properties.cacheControl!.properties!.formats!.propertyNames!.enum!;
    // The formats a server sends, each with its Cache-Control (the head snippet file is sent by none).
    expect([...formats].sort()).toEqual(FORMATS.filter((f) => f.served !== false).map((f) => f.name).sort());
    expect([...properties.compress!.items!.enum!].sort()).toEqual([...ALL_ENCODINGS].sort());
  });
});

describe('loading a configuration file', () => {
  it('accepts the documented example with its $schema key, fills the defaults and leaves $schema out', () => {
    const text = documentedExample();
    expect(text).toContain('"$schema": "./node_modules/vidfeeds/schemas/vidfeeds.config.schema.json"');
    const { dir } = tempDir();
    writeFileSync(join(dir, 'vidfeeds.config.json'), text);
    const config = loadConfig({ cwd: dir });
    expect(config.baseUrl).toBe('https://videos.example.org');
    expect(config).not.toHaveProperty('$schema');
    writeFileSync(join(dir, 'vidfeeds.config.json'), '{ "player": { "width": 640 } }');
    expect(loadConfig({ cwd: dir }).player).toEqual({ ...DEFAULT_CONFIG.player, width: 640 });
  });

  it('reports every problem at once, each with its line and column, in the order of the file', () => {
    const text = [
      '{',
      '  "bsaeUrl": "https://videos.example.org",',
      '  "baseUrl": "ftp://videos.example.org",',
      '  "width": 640,',
      '  "player": { "heigth": 300, "width": "640", "frontColor": "red" },',
      '  "pages": { "user": "{base}/people/", "tag": "{base}/{tags}/{tag}" },',
      '  "recommendationsCount": 0,',
      '  "crossDomain": { "allowAccessFrom": ["*"], "permittedCrossDomainPolicies": "some" },',
      '  "language": "en",',
      '  "language": "english"',
      '}',
    ].join('\n');
    expect(problemsOf(text)).toEqual([
      ':2:3: bsaeUrl is not a known setting; did you mean baseUrl?',
      ':3:14: baseUrl must use http or https, not ftp:',
      ':4:3: width is not a known setting; did you mean player.width?',
      ':5:15: player.heigth is not a known setting; did you mean player.height?',
      ':5:39: player.width must be a whole number, not "640"',
      ':5:60: player.frontColor must be a colour written 0x and six hex digits, not "red"',
      ':6:22: pages.user must contain {user}, not "{base}/people/"',
      ':6:47: pages.tag has an unknown placeholder {tags} (known: {base}, {user}, {video}, {group}, {tag}, {searchTerms})',
      ':7:27: recommendationsCount must be from 1 to 100, not 0',
      ':8:40: crossDomain.allowAccessFrom[0] must be a domain name or a *. wildcard (never * alone: name the domains), not "*"',
      ':8:78: crossDomain.permittedCrossDomainPolicies must be one of "none", "master-only", "by-content-type", "all", not "some"',
      ':10:3: language is given twice (first at line 9)',
      ':10:15: language must be a language tag such as en or pt-BR, not "english"',
    ]);
  });

  it('keeps the semantic checks: URL parts, credentials, a query in the base URL, control characters, empty URLs only where allowed', () => {
    expect(problemsOf('{"baseUrl": "https://user:pw@example.org", "logoUrl": "", "player": {"playerUrl": ""}}')).toEqual([
      ':1:13: baseUrl must not carry a user name or password',
      ':1:83: player.playerUrl must be an absolute http(s) URL, not ""',
    ]);
    expect(problemsOf('{"baseUrl": "https://example.org/?a=1"}')).toEqual([':1:13: baseUrl must not carry a query or fragment']);
    expect(problemsOf('{"crossDomain": {"permittedCrossDomainPolicies": "master_only"}}')).toEqual([
      ':1:50: crossDomain.permittedCrossDomainPolicies must be one of "none", "master-only", "by-content-type", "all", not "master_only"; did you mean "master-only"?',
    ]);
    expect(problemsOf('{"siteName": "a\\u0007b", "pages": {"search": "search?q={searchTerms}"}}')).toEqual([
      ':1:14: siteName must not contain control characters',
      ':1:46: pages.search must be an absolute http(s) URL once {base} is put in, not "search?q={searchTerms}"',
    ]);
  });

  it('reports JSON syntax errors with line and column, and what JSON allows', () => {
    expect(problemsOf('{\n  "baseUrl": "https://example.org",\n  // a comment\n  "siteName": "x",\n}\n')).toEqual([
      ':3:3: is not valid JSON: JSON has no comments',
      ':5:1: is not valid JSON: a key in double quotes expected (a comma too many?)',
    ]);
    expect(problemsOf('{ "baseUrl": "https://example.org" "siteName": "x" }')).toEqual([':1:36: is not valid JSON: a comma expected']);
    expect(problemsOf('   \n')).toEqual([': is empty: write {} for every default']);
    // A byte order mark is no JSON error; a missing --config file is named.
    expect(() => problemsOf('\uFEFF{ "siteName": "" }')).not.toThrow();
    expect(problemsOf('\uFEFF{ "siteName": "" }')).toEqual([':1:15: siteName must not be empty']);
    const { dir } = tempDir();
    expect(() => loadConfig({ configFile: 'missing.json', cwd: dir })).toThrow(`configuration ${join(dir, 'missing.json')}: does not exist`);
    expect(problemsOf('["https://example.org"]')).toEqual([':1:1: (the file) must be an object, not a list']);
  });

  it("blames a flag's bad value on the flag, and the file's on the file", () => {
    const flags = { baseUrl: { flag: '--base-url', value: 'ftp://x.example' }, siteName: { flag: '--site-name', value: '' } };
    // The file's own baseUrl is fine: the flag's value is what is wrong, and the flag is named.
    expect(problemsOf('{\n  "baseUrl": "https://example.org",\n  "recommendationsCount": 500\n}', flags)).toEqual([
      ':3:27: recommendationsCount must be from 1 to 100, not 500',
      '--site-name: must not be empty',
      '--base-url: must use http or https, not ftp:',
    ]);
    // A flag for a nested setting is blamed the same way, and leaves the file's other settings of that object alone.
    expect(problemsOf('{ "player": { "width": 0 } }', { 'player.template': { flag: '--player-template', value: 'no/such' } })).toEqual([
      ':1:24: player.width must be from 1 to 10000, not 0',
      '--player-template: must be a template name such as html5 or flash, not "no/such"',
    ]);
    // A file's bad value that a good flag replaces is no problem.
    const { dir } = tempDir();
    writeFileSync(join(dir, 'site.json'), '{ "baseUrl": "nonsense" }');
    expect(loadConfig({ configFile: 'site.json', cwd: dir, overrides: { baseUrl: { flag: '--base-url', value: 'https://ok.example/' } } }).baseUrl).toBe('https://ok.example');
  });
});

describe('vidfeeds build with a bad configuration', () => {
  it('exits 2 before any file is touched, printing every problem', () => {
    const { dir } = tempDir('vidfeeds-cli-');
    expect(cli(['demo', '--db', join(dir, 'site.sqlite'), '--users', '10']).code).toBe(0);
    writeFileSync(join(dir, 'vidfeeds.config.json'), '{\n  "baseUrl": "https://example.org",\n  "sitename": "x",\n  "player": { "width": 0 }\n}\n');
    const result = cli(['build', '--db', 'site.sqlite', '--out', 'out', '--base-url', 'mailto:me@example.org'], { cwd: dir });
    const file = join(dir, 'vidfeeds.config.json');
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      [
        'vidfeeds: configuration: 3 problems:',
        `  ${file}:3:3: sitename is not a known setting; did you mean siteName?`,
        `  ${file}:4:24: player.width must be from 1 to 10000, not 0`,
        '  --base-url: must use http or https, not mailto:',
        '',
      ].join('\n'),
    );
    expect(existsSync(join(dir, 'out'))).toBe(false);
    expect(existsSync(join(dir, '.vidfeeds'))).toBe(false);
  });
});
