import type { SiteContext, UserFormat } from './format.js';
import type { PersonRef, UserBundle } from '../model/views.js';
import { mailtoUri, telUri } from '../render/urls.js';
import { NS, xmlDocument } from '../render/xml.js';
import { type XmlElement } from '../render/xml-element.js';
import { personName } from '../render/xml-text.js';

/**
 * FOAF profile (seed 2.3): a `foaf:PersonalProfileDocument` about the `foaf:Person` `#me`, with
 * what the user chose to show, their interests, online accounts and public friends.
 *
 * The document sets `xml:base` to its own URL, so every relative reference in it (`""`, `#me`)
 * names the same resource wherever the file is read from. Corrections of the seed, for RDF and
 * the FOAF vocabulary (docs/formats.md lists them with their reasons): the document is
 * `rdf:about=""` (a bare username would resolve to a wrong URL); chat ids and account names are
 * literals, as FOAF defines them; the Jabber id is `foaf:jabberID`; `admin:generatorAgent` names
 * the generator; the account profile page is the percent-encoded URL itself.
 *
 * Every term is one of the vocabularies the document declares. FOAF has no term for an online
 * account's profile page, which the seed wants (`accountProfilePage`): it is
 * `vidfeeds:accountProfilePage`, in a namespace of ours (docs/formats.md defines it).
 */

/**
 * The namespace of vidfeeds's own RDF terms: the generator's URL (where its documentation is), with
 * `#` so that each term is a fragment of it.
 */
export const VIDFEEDS_RDF_NS = 'https://www.npmjs.com/package/vidfeeds#';

const RDF_NS = {
  'xmlns:rdf': 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  'xmlns:rdfs': 'http://www.w3.org/2000/01/rdf-schema#',
  'xmlns:foaf': 'http://xmlns.com/foaf/0.1/',
  'xmlns:dc': NS.dc,
  'xmlns:doap': 'http://usefulinc.com/ns/doap#',
  'xmlns:owl': 'http://www.w3.org/2002/07/owl#',
  'xmlns:admin': 'http://webns.net/mvcb/',
  'xmlns:vidfeeds': VIDFEEDS_RDF_NS,
} as const;

/** A property whose object is a resource, when there is one. */
function resource(parent: XmlElement, property: string, uri: string | null): void {
  if (uri !== null) parent.el(property, { 'rdf:resource': uri });
}

function friend(parent: XmlElement, person: PersonRef, site: SiteContext): void {
  const foafUrl = site.paths.url(foaf, person.username);
  const node = parent.el('foaf:knows').el('foaf:Person', { 'rdf:about': `${foafUrl}#me` });
  node.leaf('foaf:name', personName(person)).leaf('foaf:nick', person.username);
  resource(node, 'foaf:depiction', person.avatarUrl);
  node.optionalLeaf('foaf:mbox_sha1sum', person.emailSha1);
  resource(node, 'foaf:homepage', person.homepageUrl);
  resource(node, 'rdfs:seeAlso', foafUrl);
}

export const foaf: UserFormat = {
  name: 'foaf',
  scope: 'user',
  dir: 'foaf',
  file: 'index.rdf',
  urlName: '',
  mediaType: 'application/rdf+xml; charset=utf-8',
  inSitemap: true,
  summary: 'FOAF profile (RDF/XML): the person, their interests, accounts and public friends',
  cacheClass: 'profiles',
  needs: ['friends', 'accounts', 'interests'],

  render({ user, friends, accounts, interests }: UserBundle, site: SiteContext): string {
    const self = site.paths.url(foaf, user.username);
    const name = personName(user);
    return xmlDocument('rdf:RDF', { ...RDF_NS, 'xml:base': self }, (root) => {

      const profile = root.el('foaf:PersonalProfileDocument', { 'rdf:about': '' });
      profile.leaf('dc:title', `FOAF profile of ${name}`);
      profile.el('foaf:maker', { 'rdf:resource': '#me' });
      profile.el('foaf:primaryTopic', { 'rdf:resource': '#me' });
      profile.el('admin:generatorAgent', { 'rdf:resource': site.generator.uri });
      profile.el('admin:errorReportsTo', { 'rdf:resource': mailtoUri(site.config.contactEmail) });

      const person = root.el('foaf:Person', { 'rdf:ID': 'me' });
      person
        .leaf('foaf:name', name)
        .optionalLeaf('foaf:title', user.title)
        // Today's FOAF names, which SPARQL queries ask for, beside the seed's archaic ones, which
        // older consumers read; FOAF 0.99 defines all four.
        .optionalLeaf('foaf:givenName', user.givenName)
        .optionalLeaf('foaf:givenname', user.givenName)
        .optionalLeaf('foaf:familyName', user.familyName)
        .optionalLeaf('foaf:family_name', user.familyName)
        .leaf('foaf:nick', user.username)
        .optionalLeaf('foaf:mbox_sha1sum', user.emailSha1);
      resource(person, 'foaf:phone', user.phone === null ? null : telUri(user.phone));
      resource(person, 'foaf:homepage', user.homepageUrl);
      resource(person, 'foaf:depiction', user.avatarUrl);
      for (const tag of interests) resource(person, 'foaf:interest', site.paths.tagPage(tag));
      const chat = user.chatIds;
      if (chat !== null) {
        person
          .optionalLeaf('foaf:aimChatID', chat.aim)
          .optionalLeaf('foaf:yahooChatID', chat.yahoo)
          .optionalLeaf('foaf:msnChatID', chat.msnSha1)
          .optionalLeaf('foaf:icqChatID', chat.icq)
          .optionalLeaf('foaf:jabberID', chat.jabberSha1);
      }
      resource(person, 'foaf:openid', user.openidUrl);
      for (const account of accounts) {
        if (account.serviceHomepageUrl === null && account.profileUrl === null && account.accountName === '') continue;
        const node = person.el('foaf:holdsAccount').el('foaf:OnlineAccount');
        resource(node, 'foaf:accountServiceHomepage', account.serviceHomepageUrl);
        resource(node, 'vidfeeds:accountProfilePage', account.profileUrl);
        node.optionalLeaf('foaf:accountName', account.accountName);
      }
      for (const known of friends) friend(person, known, site);
    }, { engine: site.xmlEngine });
  },
};
