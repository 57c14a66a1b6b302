import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decimal } from '../../src/formats/apml.js';
import { HOSTILE_TEXT, PRIVATE_STRINGS, buildProfiles } from '../helpers/profile-fixture.js';
import { buildInMemory, createDemoDb } from '../helpers/site-fixture.js';
import { SCHEMAS, xmllintSchema, xpath } from '../helpers/validators.js';

const ONLY = new Set(['apml']);
const STRICT = join(SCHEMAS, 'apml-0.6.xsd');
const EMAIL_OPTIONAL = join(SCHEMAS, 'apml-0.6-email-optional.xsd');
const BASE = 'https://videos.example.org';
const x = (path: string) => path.replace(/\/(?=[a-zA-Z])/g, "/*[local-name()='").replace(/(\*\[local-name\(\)='[a-zA-Z]+)/g, "$1']");
const RFC3339_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

const build = () => buildProfiles(ONLY);

function attrs(document: string, element: string, attribute: string): string[] {
  return xpath(document, `${x(element)}/@${attribute}`)
    .split('\n')
    .map((line) => /^\s*[a-z]+="(.*)"$/.exec(line)?.[1])
    .filter((v): v is string => v !== undefined);
}

describe('APML attention profile (/<user>/apml/)', () => {
  it('is valid against the strict APML 0.6 schema for a user who shows the address, with every category', () => {
    const body = build().text('alice/apml/index.apml');
    const strict = xmllintSchema(STRICT, { alice: body });
    expect(strict.ok, strict.output).toBe(true);
    expect(xpath(body, `string(${x('/APML/Head/UserEmail')})`)).toBe('alice@mail.example.net');
    expect(xpath(body, `string(${x('/APML/Head/Generator')})`)).toBe(BASE);
    // The newest datum: the attention source of day 2.
    expect(xpath(body, `string(${x('/APML/Head/DateCreated')})`)).toBe('2024-01-03T00:00:00Z');
    expect(xpath(body, `string(${x('/APML/Body')}/@defaultprofile)`)).toBe('default');
    expect(xpath(body, `string(${x('/APML/Body/Profile')}/@name)`)).toBe('default');
    expect(xpath(body, `count(${x('/APML/Body/Profile/ExplicitData')})`)).toBe('1');

    const concepts = '/APML/Body/Profile/ImplicitData/Concepts/Concept';
    expect(attrs(body, concepts, 'key')).toEqual(['Film &amp; Animation', 'Music', 'News']);
    expect(attrs(body, concepts, 'value')).toEqual(['0', '0.75', '0.2']);
    expect(attrs(body, concepts, 'from')).toEqual([BASE, BASE, BASE]);
    // Unused or undated categories: the account's creation; scored ones: their own date.
    expect(attrs(body, concepts, 'updated')).toEqual(['2024-01-01T00:00:00Z', '2024-01-02T00:00:00Z', '2024-01-01T00:00:00Z']);

    const sources = '/APML/Body/Profile/ImplicitData/Sources/Source';
    // Only the public video from a published supplier.
    expect(attrs(body, sources, 'key')).toEqual([`${BASE}/bobclip/embed/`]);
    expect(attrs(body, sources, 'name')).toEqual(['Bob builds a shed']);
    expect(attrs(body, sources, 'value')).toEqual(['0.5']);
    expect(attrs(body, sources, 'type')).toEqual(['text/html']);
    expect(attrs(body, sources, 'from')).toEqual([`${BASE}/bob/`]);
    expect(attrs(body, sources, 'updated')).toEqual(['2024-01-03T00:00:00Z']);
    for (const text of PRIVATE_STRINGS) expect(body, text).not.toContain(text);
  });

  it('leaves UserEmail out for a user who keeps the address private, valid with UserEmail optional', () => {
    const body = build().text('hidden/apml/index.apml');
    const result = xmllintSchema(EMAIL_OPTIONAL, { hidden: body });
    expect(result.ok, result.output).toBe(true);
    expect(xpath(body, `count(${x('/APML/Head/UserEmail')})`)).toBe('0');
    expect(body).not.toContain('private.example.net');
  });

  it('gives a user with nothing a valid profile listing every category at 0', () => {
    const body = build().text('nobody/apml/index.apml');
    const result = xmllintSchema(EMAIL_OPTIONAL, { nobody: body });
    expect(result.ok, result.output).toBe(true);
    const concepts = '/APML/Body/Profile/ImplicitData/Concepts/Concept';
    expect(attrs(body, concepts, 'value')).toEqual(['0', '0', '0']);
    expect(xpath(body, `count(${x('/APML/Body/Profile/ImplicitData/Sources/*')})`)).toBe('0');
    expect(xpath(body, `string(${x('/APML/Head/DateCreated')})`)).toBe('2024-01-01T00:00:06Z');
  });

  it('keeps hostile text escaped and readable', () => {
    const body = build().text('mallory/apml/index.apml');
    const strict = xmllintSchema(STRICT, { mallory: body });
    expect(strict.ok, strict.output).toBe(true);
    const name = xpath(body, `string(${x('/APML/Body/Profile/ImplicitData/Sources/Source')}/@name)`);
    expect(name).toContain('<script>alert("x")</script>');
    expect(name).toContain('ends ]]> here');
    expect(HOSTILE_TEXT).toContain('AT&T');
    expect(name).toContain('AT&T &amp; &copy;');
    expect(xpath(body, `string(${x('/APML/Head/UserEmail')})`)).toBe('mallory+<x>&"y"@mail.example.net');
  });

  it('writes values as xs:decimal, never in exponent notation', () => {
    expect(decimal(0)).toBe('0');
    expect(decimal(1)).toBe('1');
    expect(decimal(0.5)).toBe('0.5');
    expect(decimal(1e-7)).toBe('0');
    expect(decimal(0.0000015)).toBe('0.000002');
    expect(decimal(-0)).toBe('0');
  });

  it('validates for every user of the demo site; the strict schema for those who show the address', () => {
    const { file } = createDemoDb();
    const { writer } = buildInMemory(file, { only: ONLY });
    const docs = Object.fromEntries([...writer.files].map(([path, body]) => [path, body.toString('utf8')]));
    expect(Object.keys(docs).length).toBeGreaterThan(30);
    const all = xmllintSchema(EMAIL_OPTIONAL, docs);
    expect(all.ok, all.output).toBe(true);
    const shown = Object.fromEntries(Object.entries(docs).filter(([, body]) => body.includes('<UserEmail>')));
    expect(Object.keys(shown).length).toBeGreaterThan(0);
    const strict = xmllintSchema(STRICT, shown);
    expect(strict.ok, strict.output).toBe(true);
    for (const body of Object.values(docs)) {
      for (const date of [...body.matchAll(/(?:updated="|<DateCreated>)([^"<]*)/g)].map((m) => m[1]!)) expect(date).toMatch(RFC3339_Z);
    }
  });

  it('matches the reference document', async () => {
    await expect(build().text('alice/apml/index.apml')).toMatchFileSnapshot('__snapshots__/apml-alice.apml');
  });
});
