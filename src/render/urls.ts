/**
 * URLs from the database end up in `href` and `src` attributes of pages that embed our documents.
 * Only absolute http(s) URLs are published: anything else (`javascript:`, `data:`, relative or
 * malformed) is treated as absent, so no stored value can run script in a reader's page.
 */
export function webUrl(value: string | null | undefined): string | null {
  if (value === null || value === undefined || value === '') return null;
  // Most stored URLs are already as the parser would write them: those are taken as they are,
  // since parsing costs far more than the check and a feed's every video carries three URLs.
  return isPlainWebUrl(value) ? value : parsedWebUrl(value);
}

/** Whether `webUrl` takes `value` as it is, without parsing it (see PLAIN_WEB_URL). */
export function isPlainWebUrl(value: string): boolean {
  return PLAIN_WEB_URL.test(value) && !DOT_SEGMENT.test(value);
}

/**
 * An http(s) URL that the WHATWG URL parser returns unchanged: a lowercase scheme; a host of
 * lowercase ASCII labels, none of them punycode (`xn--`, which the parser checks), the last one
 * starting with a letter (a host ending in a number is read as an IPv4 address); no user, no
 * port, no fragment; a path, and maybe a query, of characters the parser neither encodes nor
 * reads specially (no `\`, no `'`, which it encodes in the query of these schemes). Anything else
 * is parsed; test/render/urls.test.ts holds the two to the same answers.
 */
const PLAIN_WEB_URL = /^https?:\/\/(?:(?!xn--)[a-z0-9-]+\.)*(?!xn--)[a-z][a-z0-9-]*\/[A-Za-z0-9\-._~!$&()*+,;=:@%/]*(?:\?[A-Za-z0-9\-._~!$&()*+,;=:@%/?]*)?$/;
/** A path segment the parser may resolve or drop: `.`, `..` or their percent-encoded forms (or any segment starting so). */
const DOT_SEGMENT = /\/(?:\.|%2e)/i;

/** `webUrl` by the WHATWG URL parser. */
export function parsedWebUrl(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.hostname === '') return null;
  return url.href;
}

/**
 * A phone number as a `tel:` URI (RFC 3966: digits with an optional leading `+` and the visual
 * separators `-`, `.`, `(`, `)`; spaces dropped), or null when the text is not a phone number.
 */
export function telUri(phone: string): string | null {
  const compact = phone.replace(/\s+/gu, '');
  // Two linear tests: the one pattern `^\+?[0-9().-]*[0-9][0-9().-]*$` backtracks, its time growing
  // with the square of the length on a long run of digits that ends in another character.
  if (!/^\+?[0-9().-]+$/.test(compact) || !/[0-9]/.test(compact)) return null;
  return `tel:${compact}`;
}

/** A `mailto:` URI for an address, its parts percent-encoded so no character of it can end the URI. */
export function mailtoUri(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 0) return `mailto:${encodeURIComponent(address)}`;
  return `mailto:${encodeURIComponent(address.slice(0, at))}@${encodeURIComponent(address.slice(at + 1))}`;
}
