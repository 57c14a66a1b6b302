import { hash } from 'node:crypto';
import type { GroupOwner, PersonRef, UserView } from '../model/views.js';
import { webUrl } from '../render/urls.js';
import { decoder, type DecodeContext } from './decode-context.js';
import { userColumn, type RawOwner, type RawPerson, type RawUser } from './reader-columns.js';

/**
 * People as the documents see them: a user's own view (their profile, with every privacy choice
 * applied) and a published user named from another document (a friend, an uploader, an owner).
 */

/** SHA-1 hex of `mailto:` + address, as FOAF's mbox_sha1sum defines it. */
export function mboxSha1(email: string): string {
  return sha1Hex(`mailto:${email}`);
}

/** One-shot `hash` (the text as UTF-8, like `createHash().update()`): a third of the time of a Hash object, and every published person has one. */
function sha1Hex(text: string): string {
  return hash('sha1', text, 'hex');
}

/**
 * A published user seen from another document. Its username passed SQL (text); the rest is decoded.
 * Decoded each time, not kept for the snapshot: kept people outlive V8's young generation and die
 * in the old one, which cost a feed-heavy build more memory and time than decoding them again
 * (docs/performance.md, "Figures behind the code").
 */
export function person(ctx: DecodeContext, [id, username, displayName, avatarUrl, homepageUrl, email]: RawPerson): PersonRef {
  const d = decoder(ctx, 'users', id);
  const address = d.text('email', email);
  return {
    username,
    displayName: d.text('display_name', displayName) ?? '',
    avatarUrl: webUrl(d.text('avatar_url', avatarUrl)),
    homepageUrl: webUrl(d.text('homepage_url', homepageUrl)),
    emailSha1: address ? mboxSha1(address) : null,
  };
}

/** A published user as a group's entry names its owner: by username and display name. */
export function groupOwner(ctx: DecodeContext, [id, username, displayName]: RawOwner): GroupOwner {
  return { username, displayName: decoder(ctx, 'users', id).text('display_name', displayName) ?? '' };
}

export function userView(ctx: DecodeContext, raw: RawUser): UserView {
  const id = userColumn(raw, 'id') as number;
  const d = decoder(ctx, 'users', id);
  const text = (column: string) => d.text(column, userColumn(raw, column));
  const flag = (column: string) => d.flag(column, userColumn(raw, column));
  const email = text('email');
  const shown = (isShown: boolean, value: string | null) => (isShown && value ? value : null);
  const address = {
    street_address: text('street_address'),
    locality: text('locality'),
    region: text('region'),
    region_name: text('region_name'),
    postal_code: text('postal_code'),
    country_name: text('country_name'),
  };
  const hasAddress = flag('show_address') && [address.street_address, address.locality, address.region, address.postal_code, address.country_name].some(Boolean);
  const chatShown = flag('show_chat_ids');
  const chat = {
    aim: text('aim_chat_id'),
    yahoo: text('yahoo_chat_id'),
    msn: text('msn_chat_id'),
    icq: text('icq_chat_id'),
    jabber: text('jabber_chat_id'),
  };
  // Published users passed SQL's `owner` columns (publishedUser): created_at is a valid time.
  const createdAt = d.time('created_at', userColumn(raw, 'created_at'))!;
  return {
    id,
    username: userColumn(raw, 'username') as string,
    displayName: text('display_name') ?? '',
    title: text('title') ?? '',
    givenName: text('given_name') ?? '',
    familyName: text('family_name') ?? '',
    email: shown(flag('show_email'), email),
    emailSha1: email ? mboxSha1(email) : null,
    phone: shown(flag('show_phone'), text('phone')),
    homepageUrl: webUrl(text('homepage_url')),
    avatarUrl: webUrl(text('avatar_url')),
    openidUrl: webUrl(text('openid_url')),
    chatIds: chatShown
      ? {
          aim: chat.aim || null,
          yahoo: chat.yahoo || null,
          // E-mail-shaped ids: published only as their hash (seed 2.3, "some are hashed").
          msnSha1: chat.msn ? sha1Hex(chat.msn) : null,
          icq: chat.icq || null,
          jabberSha1: chat.jabber ? sha1Hex(chat.jabber) : null,
        }
      : null,
    address: hasAddress
      ? {
          streetAddress: address.street_address ?? '',
          locality: address.locality ?? '',
          region: address.region ?? '',
          regionName: address.region_name ?? address.region ?? '',
          postalCode: address.postal_code ?? '',
          countryName: address.country_name ?? '',
        }
      : null,
    createdAt,
    updatedAt: d.time('updated_at', userColumn(raw, 'updated_at')) ?? createdAt,
  };
}
