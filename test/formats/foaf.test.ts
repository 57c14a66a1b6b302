import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { xmlChars } from '../../src/render/xml-text.js';
import { objects, parseNTriples, type Triple } from '../helpers/ntriples.js';
import { ALICE, HIDDEN, HOSTILE_TEXT, PRIVATE_STRINGS, buildProfiles } from '../helpers/profile-fixture.js';
import { buildInMemory, createDemoDb } from '../helpers/site-fixture.js';
import { rapperTriples } from '../helpers/validators.js';
import { VOCABULARIES } from '../fixtures/rdf-vocabularies.js';

const ONLY = new Set(['foaf']);
const BASE = 'https://videos.example.org';
const FOAF = 'http://xmlns.com/foaf/0.1/';
const RDF_TYPE = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#type';
const SEE_ALSO = 'http://www.w3.org/2000/01/rdf-schema#seeAlso';
const ADMIN = 'http://webns.net/mvcb/';
const VIDFEEDS = 'https://www.npmjs.com/package/vidfeeds#';

const build = () => buildProfiles(ONLY);

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
const foafUrl = (user: string) => `${BASE}/${user}/foaf/`;

/** Parses with rapper (Raptor's RDF/XML parser) as if fetched from `retrievedFrom`. */
function triples(document: string, retrievedFrom: string): Triple[] {
  const result = rapperTriples(document, retrievedFrom);
  expect(result.ok, result.output).toBe(true);
  return parseNTriples(result.output);
}

describe('FOAF profile (/<user>/foaf/)', () => {
  it('describes the document and the person with every property of seed 2.3, as rapper reads the triples', () => {
    const body = build().text('alice/foaf/index.rdf');
    const t = triples(body, foafUrl('alice'));
    const doc = foafUrl('alice');
    const me = `${doc}#me`;
    const one = (s: string, p: string) => objects(t, s, p);

    expect(one(doc, RDF_TYPE)).toEqual([`${FOAF}PersonalProfileDocument`]);
    expect(one(doc, `${FOAF}maker`)).toEqual([me]);
    expect(one(doc, `${FOAF}primaryTopic`)).toEqual([me]);
    expect(one(doc, `${ADMIN}generatorAgent`)).toEqual(['https://www.npmjs.com/package/vidfeeds']);
    expect(one(doc, `${ADMIN}errorReportsTo`)).toEqual(['mailto:webmaster@example.org']);

    expect(one(me, RDF_TYPE)).toEqual([`${FOAF}Person`]);
    expect(one(me, `${FOAF}name`)).toEqual(['Alice Liddell']);
    expect(one(me, `${FOAF}title`)).toEqual(['Dr']);
    expect(one(me, `${FOAF}givenname`)).toEqual(['Alice']);
    expect(one(me, `${FOAF}family_name`)).toEqual(['Liddell']);
    // Today's FOAF names beside the seed's, with the same values.
    expect(one(me, `${FOAF}givenName`)).toEqual(['Alice']);
    expect(one(me, `${FOAF}familyName`)).toEqual(['Liddell']);
    expect(one(me, `${FOAF}nick`)).toEqual(['alice']);
    // The hash is SHA-1 of "mailto:" + the address; the address itself never appears.
    expect(one(me, `${FOAF}mbox_sha1sum`)).toEqual([sha1(`mailto:${ALICE.email}`)]);
    expect(one(me, `${FOAF}phone`)).toEqual(['tel:+15550100']);
    expect(one(me, `${FOAF}homepage`)).toEqual(['https://home.example.net/~alice/']);
    expect(one(me, `${FOAF}depiction`)).toEqual(['https://videos.example.org/avatars/alice.jpg']);
    expect(one(me, `${FOAF}interest`).sort()).toEqual([`${BASE}/tags/cats/`, `${BASE}/tags/jazz/`]);
    expect(one(me, `${FOAF}aimChatID`)).toEqual(['aliceaim']);
    expect(one(me, `${FOAF}yahooChatID`)).toEqual(['alice_yahoo']);
    expect(one(me, `${FOAF}icqChatID`)).toEqual(['123456789']);
    expect(one(me, `${FOAF}msnChatID`)).toEqual([sha1(ALICE.msn)]);
    expect(one(me, `${FOAF}jabberID`)).toEqual([sha1(ALICE.jabber)]);
    expect(one(me, `${FOAF}openid`)).toEqual(['https://openid.example.net/alice']);

    const accounts = one(me, `${FOAF}holdsAccount`);
    expect(accounts).toHaveLength(2);
    const byName = new Map(accounts.map((a) => [one(a, `${FOAF}accountName`)[0], a]));
    const photos = byName.get('alice.photos')!;
    expect(one(photos, RDF_TYPE)).toEqual([`${FOAF}OnlineAccount`]);
    expect(one(photos, `${FOAF}accountServiceHomepage`)).toEqual(['https://photos.example.com/']);
    // FOAF has no term for it: the seed's accountProfilePage is ours (docs/formats.md).
    expect(one(photos, `${VIDFEEDS}accountProfilePage`)).toEqual(['https://photos.example.com/people/alice%20l']);
    expect(one(photos, `${FOAF}accountProfilePage`)).toEqual([]);
    // A javascript: profile page is left out; the rest of the account stays.
    const other = byName.get('acct1')!;
    expect(one(other, `${FOAF}accountServiceHomepage`)).toEqual(['https://www.example.com/']);
    expect(one(other, `${VIDFEEDS}accountProfilePage`)).toEqual([]);
  });

  it('lists only public friends, each with their own FOAF URL in rdfs:seeAlso', () => {
    const body = build().text('alice/foaf/index.rdf');
    const t = triples(body, foafUrl('alice'));
    const me = `${foafUrl('alice')}#me`;
    const bob = `${foafUrl('bob')}#me`;
    expect(objects(t, me, `${FOAF}knows`)).toEqual([bob]);
    expect(objects(t, bob, RDF_TYPE)).toEqual([`${FOAF}Person`]);
    expect(objects(t, bob, `${FOAF}name`)).toEqual(['Bob Builder']);
    expect(objects(t, bob, `${FOAF}nick`)).toEqual(['bob']);
    expect(objects(t, bob, `${FOAF}depiction`)).toEqual(['https://videos.example.org/avatars/bob.jpg']);
    expect(objects(t, bob, `${FOAF}homepage`)).toEqual(['https://bob.example.net/']);
    expect(objects(t, bob, `${FOAF}mbox_sha1sum`)).toEqual([sha1('mailto:bob@mail.example.net')]);
    expect(objects(t, bob, SEE_ALSO)).toEqual([foafUrl('bob')]);
    for (const text of PRIVATE_STRINGS) expect(body, text).not.toContain(text);
  });

  it('names the same resources wherever the file is read from (xml:base)', () => {
    const body = build().text('alice/foaf/index.rdf');
    const here = triples(body, foafUrl('alice'));
    const elsewhere = triples(body, 'file:///tmp/saved-copy.rdf');
    const key = (list: Triple[]) => list.filter((x) => !x.s.startsWith('_:')).map((x) => `${x.s} ${x.p} ${x.literal ? JSON.stringify(x.o) : x.o.startsWith('_:') ? '_' : x.o}`).sort();
    expect(key(elsewhere)).toEqual(key(here));
  });

  it('publishes what a user keeps private only as the e-mail hash', () => {
    const body = build().text('hidden/foaf/index.rdf');
    const t = triples(body, foafUrl('hidden'));
    const me = `${foafUrl('hidden')}#me`;
    expect(objects(t, me, `${FOAF}mbox_sha1sum`)).toEqual([sha1(`mailto:${HIDDEN.email}`)]);
    expect(objects(t, me, `${FOAF}phone`)).toEqual([]);
    expect(objects(t, me, `${FOAF}aimChatID`)).toEqual([]);
    for (const text of [HIDDEN.email, HIDDEN.phone, HIDDEN.aim, HIDDEN.street]) expect(body).not.toContain(text);
  });

  it('gives a user with nothing a valid profile of their name', () => {
    const body = build().text('nobody/foaf/index.rdf');
    const t = triples(body, foafUrl('nobody'));
    const me = `${foafUrl('nobody')}#me`;
    expect(objects(t, me, `${FOAF}name`)).toEqual(['nobody']);
    expect(objects(t, me, `${FOAF}nick`)).toEqual(['nobody']);
    expect(t.filter((x) => x.s === me).map((x) => x.p).sort()).toEqual([RDF_TYPE, `${FOAF}name`, `${FOAF}nick`].sort());
  });

  it('keeps hostile text as literals and drops non-web URLs', () => {
    const body = build().text('mallory/foaf/index.rdf');
    const t = triples(body, foafUrl('mallory'));
    const me = `${foafUrl('mallory')}#me`;
    expect(objects(t, me, `${FOAF}name`)).toEqual([xmlChars(`Mallory ${HOSTILE_TEXT}`)]);
    expect(objects(t, me, `${FOAF}aimChatID`)).toEqual([xmlChars(HOSTILE_TEXT)]);
    expect(objects(t, me, `${FOAF}homepage`)).toEqual([]);
    expect(objects(t, me, `${FOAF}depiction`)).toEqual([]);
    // A phone number that is not one is not turned into a tel: URI.
    expect(objects(t, me, `${FOAF}phone`)).toEqual([]);
    expect(objects(t, me, `${FOAF}openid`)).toEqual(['https://openid.example.net/mallory?a=1&b=%222%22']);
    expect(objects(t, me, `${FOAF}interest`)).toEqual([`${BASE}/tags/${encodeURIComponent('<tag> & "ends ]]> here ]]]]> and <![CDATA[ opens"')}/`]);
    expect(body).not.toMatch(/javascript:|data:image/);
  });

  it('parses for every user of the demo site', () => {
    const { file } = createDemoDb();
    const { writer } = buildInMemory(file, { only: ONLY });
    expect(writer.files.size).toBeGreaterThan(30);
    for (const [path, bytes] of writer.files) {
      const result = rapperTriples(bytes.toString('utf8'), `${BASE}/${path}`);
      expect(result.ok, `${path}: ${result.output}`).toBe(true);
      expect(result.output, path).toContain(`${FOAF}Person`);
    }
  });

  it('uses only terms of the vocabularies it declares (FOAF 0.99 and the others), for every demo user', () => {
    const { file } = createDemoDb();
    const { writer } = buildInMemory(file, { only: ONLY });
    const documents = [...writer.files].map(([path, bytes]) => [path, bytes.toString('utf8')] as const);
    documents.push(['alice (every property)', build().text('alice/foaf/index.rdf')]);
    const used = new Set<string>();
    for (const [path, body] of documents) {
      const root = /<rdf:RDF\b[^>]*>/.exec(body)![0];
      const declared = [...root.matchAll(/xmlns:\w+="([^"]+)"/g)].map((m) => m[1]!);
      const result = rapperTriples(body, `${BASE}/${path}`);
      expect(result.ok, `${path}: ${result.output}`).toBe(true);
      const triples = parseNTriples(result.output);
      // Predicates, and the classes things are typed with.
      const terms = [...triples.map((t) => t.p), ...triples.filter((t) => t.p === RDF_TYPE).map((t) => t.o)];
      for (const term of terms) {
        const namespace = declared.find((ns) => term.startsWith(ns) && VOCABULARIES[ns] !== undefined && VOCABULARIES[ns].includes(term.slice(ns.length)));
        expect(namespace, `${path}: ${term} is no term of a vocabulary the document declares (${declared.join(' ')})`).toBeDefined();
        used.add(term);
      }
    }
    // The check saw the account terms, ours included.
    expect(used).toContain(`${FOAF}OnlineAccount`);
    expect(used).toContain(`${VIDFEEDS}accountProfilePage`);
  });

  it('matches the reference document', async () => {
    await expect(build().text('alice/foaf/index.rdf')).toMatchFileSnapshot('__snapshots__/foaf-alice.rdf');
  });
});
