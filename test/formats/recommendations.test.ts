import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildInMemory, createDemoDb, createTestDb, insertRow, insertUser, T0, testConfig } from '../helpers/site-fixture.js';
import { HOSTILE_TEXT, seedProfiles } from '../helpers/profile-fixture.js';
import { xmllintSchema, xpath } from '../helpers/validators.js';

const SCHEMA = resolve(import.meta.dirname, '../../docs/schemas/recommendations.xsd');
const ONLY = new Set(['recommendations']);

function fixture() {
  const f = createTestDb();
  seedProfiles(f.db);
  return f;
}

/** Values of an XPath over text nodes or attributes, one per line as xmllint prints them. */
function values(document: string, expression: string): string[] {
  return xpath(document, expression)
    .split('\n')
    .map((line) => line.trim().replace(/^[a-z]+="(.*)"$/, '$1'))
    .filter(Boolean);
}

describe('recommendations (/<user>/openrecommender/)', () => {
  it('lists the 8 newest public recommendations with web URLs, newest first, valid against our schema', () => {
    const { file } = fixture();
    const { writer } = buildInMemory(file, { only: ONLY });
    const body = writer.text('alice/openrecommender/index.xml');
    expect(xmllintSchema(SCHEMA, { alice: body })).toMatchObject({ ok: true });
    // Private, javascript: link and data: image rows are newer than every pick, and all left out.
    expect(values(body, '//recommendation/title/text()')).toEqual(['Pick 9', 'Pick 8', 'Pick 7', 'Pick 6', 'Pick 5', 'Pick 4', 'Pick 3', 'Pick 2']);
    expect(body).not.toMatch(/Private pick|Script pick|Data pick|javascript:|data:image/);
    expect(xpath(body, 'string(/recommendations/recommendation[1]/link)')).toBe('https://elsewhere.example.com/watch?v=9&t=1');
    expect(xpath(body, 'string(/recommendations/recommendation[1]/image)')).toBe('https://elsewhere.example.com/thumb/9.jpg');
    expect(xpath(body, 'string(/recommendations/recommendation[1]/description)')).toBe('The best one');
  });

  it('writes the duration as mm:ss when known, minutes past 99 included, and leaves it out when not', () => {
    const { file } = fixture();
    const body = buildInMemory(file, { only: ONLY }).writer.text('alice/openrecommender/index.xml');
    expect(xpath(body, 'string(/recommendations/recommendation[1]/title/@duration)')).toBe('125:07');
    expect(xpath(body, 'count(/recommendations/recommendation[2]/title/@duration)')).toBe('0');
    expect(xpath(body, 'string(/recommendations/recommendation[3]/title/@duration)')).toBe('01:12');
    expect(xpath(body, 'count(/recommendations/recommendation[2]/description)')).toBe('0');
  });

  it('takes the count from the configuration', () => {
    const { file } = fixture();
    const body = buildInMemory(file, { only: ONLY, config: testConfig({ recommendationsCount: 3 }) }).writer.text('alice/openrecommender/index.xml');
    expect(values(body, '//recommendation/title/text()')).toEqual(['Pick 9', 'Pick 8', 'Pick 7']);
  });

  it('still fills the count when unpublishable rows are among the newest', () => {
    const { db, file } = createTestDb();
    const u = insertUser(db, { username: 'picky' });
    for (let r = 0; r < 12; r++) {
      const bad = r % 2 === 1;
      insertRow(db, 'recommendations', {
        user_id: u.id,
        title: `R${r}`,
        link: bad ? 'ftp://elsewhere.example.com/x' : `https://elsewhere.example.com/${r}`,
        image: 'https://elsewhere.example.com/i.jpg',
        created_at: T0 + r,
      });
    }
    const body = buildInMemory(file, { only: ONLY, config: testConfig({ recommendationsCount: 4 }) }).writer.text('picky/openrecommender/index.xml');
    expect(values(body, '//recommendation/title/text()')).toEqual(['R10', 'R8', 'R6', 'R4']);
  });

  it('gives a user with nothing a valid, empty list', () => {
    const { file } = fixture();
    const body = buildInMemory(file, { only: ONLY }).writer.text('nobody/openrecommender/index.xml');
    expect(xmllintSchema(SCHEMA, { nobody: body })).toMatchObject({ ok: true });
    expect(xpath(body, 'count(/recommendations/*)')).toBe('0');
  });

  it('keeps hostile text escaped and readable', () => {
    const { file } = fixture();
    const body = buildInMemory(file, { only: ONLY }).writer.text('mallory/openrecommender/index.xml');
    expect(xmllintSchema(SCHEMA, { mallory: body })).toMatchObject({ ok: true });
    const title = xpath(body, 'string(/recommendations/recommendation/title)');
    expect(title).toContain('<script>alert("x")</script>');
    expect(title).toContain('ends ]]> here');
    expect(title).toContain('AT&T &amp; &copy;');
    expect(title).toContain('🎬😀𝕏');
    expect(xpath(body, 'string(/recommendations/recommendation/link)')).toBe('https://elsewhere.example.com/m?a=%3Cb%3E&c=%22d%22');
    expect(HOSTILE_TEXT).toContain('\u0007');
    expect(body).not.toContain('\u0007');
  });

  it('validates for every user of the demo site, and its bytes are stable', async () => {
    const { file } = createDemoDb();
    const first = buildInMemory(file, { only: ONLY }).writer;
    const docs = Object.fromEntries([...first.files].map(([path, body]) => [path, body.toString('utf8')]));
    expect(Object.keys(docs).length).toBeGreaterThan(30);
    const result = xmllintSchema(SCHEMA, docs);
    expect(result.ok, result.output).toBe(true);
    const again = buildInMemory(file, { only: ONLY }).writer;
    for (const [path, body] of first.files) expect(again.files.get(path)?.equals(body), path).toBe(true);
  });

  it('has a schema that refuses what the format forbids', () => {
    const item = (title: string, link: string, image: string) =>
      `<?xml version="1.0" encoding="UTF-8"?><recommendations><recommendation>${title}${link}${image}</recommendation></recommendations>`;
    const good = ['<title duration="03:25">t</title>', '<link>https://example.org/v</link>', '<image>https://example.org/i.jpg</image>'] as const;
    expect(xmllintSchema(SCHEMA, { good: item(...good) }).ok).toBe(true);
    const bad = {
      shortMinutes: item('<title duration="3:25">t</title>', good[1], good[2]),
      seconds60: item('<title duration="03:60">t</title>', good[1], good[2]),
      scriptLink: item(good[0], '<link>javascript:alert(1)</link>', good[2]),
      relativeImage: item(good[0], good[1], '<image>/i.jpg</image>'),
      noImage: item(good[0], good[1], ''),
    };
    for (const [name, doc] of Object.entries(bad)) expect(xmllintSchema(SCHEMA, { [name]: doc }).ok, name).toBe(false);
  });

  it('matches the reference document', async () => {
    const { file } = fixture();
    const body = buildInMemory(file, { only: ONLY }).writer.text('alice/openrecommender/index.xml');
    await expect(body).toMatchFileSnapshot('__snapshots__/recommendations-alice.xml');
  });
});
