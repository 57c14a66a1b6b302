import { describe, expect, it } from 'vitest';
import { hcardReadings, type Mf2Item } from '../helpers/microformats.js';
import { ALICE, HIDDEN, HOSTILE_TEXT, PRIVATE_STRINGS, buildProfiles } from '../helpers/profile-fixture.js';
import { buildInMemory, createDemoDb } from '../helpers/site-fixture.js';

const ONLY = new Set(['hcard']);
const BASE = 'https://videos.example.org';

const build = () => buildProfiles(ONLY);

/** The one card of a page in each reading; every page has exactly one. */
function cards(html: string, user: string): { mf2: Mf2Item; classic: Mf2Item } {
  const { mf2, classic } = hcardReadings(html, `${BASE}/${user}/hcard/`);
  expect(mf2.map((i) => i.type)).toEqual([['h-card']]);
  expect(classic.map((i) => i.type)).toEqual([['h-card']]);
  return { mf2: mf2[0]!, classic: classic[0]! };
}

function adr(card: Mf2Item): Record<string, unknown[]> {
  const list = card.properties.adr as Mf2Item[] | undefined;
  expect(list).toHaveLength(1);
  return list![0]!.properties;
}

describe('hCard page (/<user>/hcard/)', () => {
  it('is a full HTML5 page', () => {
    const html = build().text('alice/hcard/index.html');
    expect(html).toMatch(/^<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">/);
    expect(html).toContain('<title>Alice Liddell on vidfeeds demo</title>');
    expect(html.trimEnd()).toMatch(/<\/html>$/);
  });

  it('reads the same in the microformats2 and the classic hCard parsing: name, address parts, phone, e-mail', () => {
    const html = build().text('alice/hcard/index.html');
    const both = cards(html, 'alice');
    for (const [reading, card] of Object.entries(both)) {
      const p = card.properties;
      expect(p.name, reading).toEqual(['Alice Liddell']);
      expect(p['honorific-prefix'], reading).toEqual(['Dr']);
      expect(p['given-name'], reading).toEqual(['Alice']);
      expect(p['family-name'], reading).toEqual(['Liddell']);
      expect(p.nickname, reading).toEqual(['alice']);
      expect(p.url, reading).toEqual([`${BASE}/alice/`]);
      expect(p.tel, reading).toEqual([ALICE.phone]);
      expect(p.email, reading).toEqual([`mailto:${ALICE.email}`]);
      expect(JSON.stringify(p.photo), reading).toContain('https://videos.example.org/avatars/alice.jpg');
      expect(adr(card), reading).toEqual({
        'street-address': ['1 Rabbit Hole'],
        locality: ['Oxford'],
        // The region's full name, from its title (abbr pattern).
        region: ['Oxfordshire'],
        'postal-code': ['OX1 1AA'],
        'country-name': ['United Kingdom'],
      });
    }
  });

  it('shows no address, phone or e-mail the user keeps private', () => {
    const html = build().text('hidden/hcard/index.html');
    const both = cards(html, 'hidden');
    for (const card of Object.values(both)) {
      expect(card.properties.name).toEqual(['Hidden Person']);
      expect(card.properties.adr).toBeUndefined();
      expect(card.properties.tel).toBeUndefined();
      expect(card.properties.email).toBeUndefined();
    }
    for (const text of [HIDDEN.email, HIDDEN.phone, HIDDEN.street, 'Secretland', 'mailto:', 'telecommunications']) expect(html).not.toContain(text);
    for (const [path, body] of build().files) {
      for (const text of PRIVATE_STRINGS) expect(body.toString('utf8'), `${path} shows ${text}`).not.toContain(text);
    }
  });

  it('gives a user with nothing a valid card of their username', () => {
    const html = build().text('nobody/hcard/index.html');
    const both = cards(html, 'nobody');
    for (const card of Object.values(both)) {
      expect(card.properties.name).toEqual(['nobody']);
      expect(card.properties.url).toEqual([`${BASE}/nobody/`]);
      expect(Object.keys(card.properties).sort()).toEqual(['name', 'nickname', 'uid', 'url']);
    }
  });

  it('keeps hostile text escaped: it reads back as text and adds no markup', () => {
    const html = build().text('mallory/hcard/index.html');
    const both = cards(html, 'mallory');
    const cleaned = (text: string) => text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]/g, '');
    for (const [reading, card] of Object.entries(both)) {
      const p = card.properties;
      expect(p.name, reading).toEqual([cleaned(`Mallory ${HOSTILE_TEXT}`)]);
      expect(p['given-name'], reading).toEqual([cleaned(HOSTILE_TEXT)]);
      expect(adr(card)['street-address'], reading).toEqual([cleaned(HOSTILE_TEXT)]);
      expect(adr(card).region, reading).toEqual([cleaned('ends ]]> here ]]]]> and <![CDATA[ opens')]);
      expect(p.email, reading).toEqual(['mailto:mallory%2B%3Cx%3E%26%22y%22@mail.example.net']);
      expect(p.photo, reading).toBeUndefined();
    }
    expect(html).not.toMatch(/<script|<b |onmouseover=|javascript:|data:image/);
    expect(html.match(/<[a-z]+/g)!.every((tag) => ['<html', '<head', '<meta', '<title', '<link', '<body', '<div', '<p', '<span', '<a', '<abbr'].includes(tag))).toBe(true);
    expect(html).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/);
  });

  it('gives every user of the demo site one card that both readings agree on', () => {
    const { file } = createDemoDb();
    const { writer } = buildInMemory(file, { only: ONLY });
    expect(writer.files.size).toBeGreaterThan(30);
    for (const [path, bytes] of writer.files) {
      const user = path.split('/')[0]!;
      const { mf2, classic } = cards(bytes.toString('utf8'), user);
      for (const name of ['name', 'url', 'tel', 'email', 'adr']) {
        expect(JSON.stringify(classic.properties[name]), `${path} ${name}`).toEqual(JSON.stringify(mf2.properties[name]));
      }
    }
  });

  it('matches the reference page', async () => {
    await expect(build().text('alice/hcard/index.html')).toMatchFileSnapshot('__snapshots__/hcard-alice.html');
  });
});
