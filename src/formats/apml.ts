import type { SiteContext, UserFormat } from './format.js';
import type { UserBundle } from '../model/views.js';
import { latest, rfc3339 } from '../render/dates.js';
import { xmlDocument } from '../render/xml.js';
import { xmlChars } from '../render/xml-text.js';

/**
 * APML 0.6 attention profile (seed 2.6) from the attention data the site computes: one implicit
 * `Concept` per category of the site (value 0 where the user has none, so every
 * profile lists the same categories) and
 * one `Source` per video that supplied attention. Valid against the APML 0.6 schema.
 *
 * Corrections of the seed, for the APML 0.6 schema: every date is `YYYY-MM-DDThh:mm:ssZ`;
 * `Head/UserEmail`, which the schema requires, is written only for users who chose to show their
 * address (the others' documents validate against the schema with `UserEmail` optional);
 * a `Source` carries the `name` and `type` the schema requires; the document is in the APML
 * namespace.
 */

const APML_NS = 'http://www.apml.org/apml-0.6';
const PROFILE = 'default';

/**
 * Whether the APML 0.6 schema's address pattern (`EmailType`, `[^@]+@[^@]+(\.[^.]+)+`) takes
 * `text`; an address it refuses is left out. Checked without that regular expression, which
 * backtracks: its time grows with the square of the length on a value like `a@.a.a…@`
 * (docs/database.md, "Time is linear"). After the first `@`, the part before some dot must hold no
 * `@` (the pattern's `[^@]+`), and from that dot on (`(\.[^.]+)+`) no two dots may touch and the
 * last character is not a dot; the last dot before the next `@` is the best choice.
 */
export function apmlEmail(text: string): boolean {
  const at = text.indexOf('@');
  if (at < 1) return false;
  const rest = text.slice(at + 1);
  const nextAt = rest.indexOf('@');
  const dot = rest.lastIndexOf('.', nextAt === -1 ? rest.length : nextAt);
  if (dot < 1 || (nextAt !== -1 && dot > nextAt)) return false;
  const tail = rest.slice(dot);
  return !tail.includes('..') && !tail.endsWith('.');
}

/** A value as an `xs:decimal` (never in exponent notation), at most six decimals. */
export function decimal(value: number): string {
  if (!Number.isFinite(value)) return '0';
  const text = Math.min(1, Math.max(-1, value)).toFixed(6).replace(/\.?0+$/, '');
  return text === '-0' ? '0' : text;
}

export const apml: UserFormat = {
  name: 'apml',
  scope: 'user',
  dir: 'apml',
  file: 'index.apml',
  urlName: '',
  mediaType: 'application/xml+apml; charset=utf-8',
  inSitemap: true,
  summary: "APML 0.6 attention profile: the user's interest in every category, and its sources",
  cacheClass: 'feeds',
  needs: ['attention'],

  render({ user, attention }: UserBundle, site: SiteContext): string {
    const { concepts, sources } = attention;
    // The profile is as new as its newest datum: never the build's clock, so the bytes are stable.
    const created = latest(
      [...concepts.flatMap((c) => (c.updatedAt === null ? [] : [c.updatedAt])), ...sources.map((s) => s.updatedAt)],
      user.updatedAt,
    );
    return xmlDocument('APML', { xmlns: APML_NS, version: '0.6' }, (root) => {
      const head = root.el('Head');
      head.leaf('Title', `Attention profile of ${user.username} on ${site.config.siteName}`).leaf('Generator', site.paths.base);
      if (user.email !== null && apmlEmail(xmlChars(user.email))) head.leaf('UserEmail', user.email);
      head.leaf('DateCreated', rfc3339(created));

      const profile = root.el('Body', { defaultprofile: PROFILE }).el('Profile', { name: PROFILE });
      const implicit = profile.el('ImplicitData');
      const conceptList = implicit.el('Concepts');
      for (const concept of concepts) {
        conceptList.el('Concept', {
          key: concept.category,
          value: decimal(concept.value),
          from: site.paths.base,
          // A category never scored has been at 0 since the account was made.
          updated: rfc3339(concept.updatedAt ?? user.createdAt),
        });
      }
      const sourceList = implicit.el('Sources');
      for (const source of sources) {
        sourceList.el('Source', {
          key: site.paths.videoPage(source.video.publicId),
          name: source.video.title,
          value: decimal(source.value),
          type: 'text/html',
          from: site.paths.userPage(source.supplier.username),
          updated: rfc3339(source.updatedAt),
        });
      }
      profile.el('ExplicitData');
    }, { engine: site.xmlEngine });
  },
};
