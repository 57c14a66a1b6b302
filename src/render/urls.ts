/**
 * URLs from the database end up in `href` and `src` attributes of pages that embed our documents.
 * Only absolute http(s) URLs are published: anything else (`javascript:`, `data:`, relative or
 * malformed) is treated as absent, so no stored value can run script in a reader's page.
 * A published URL is an RFC 3986 URI, as the documents' grammars require (`xsd:anyURI` of the
 * sitemap, XSPF, oEmbed XML and recommendation schemas, RFC 4287's IRIs): the WHATWG parser
 * leaves some characters RFC 3986 does not allow where they stand (`%` without two hex digits,
 * `[` and `]` outside the host, `|`, `^`, a second `#`; `{` or `"` even in a host name), and those are
 * percent-encoded.
 */
export function webUrl(value: string | null | undefined): string | null {
  if (value === null || value === undefined || value === '') return null;
  // Most stored URLs are already as the parser would write them: those are taken as they are,
  // since parsing costs far more than the check and a feed's every video carries three URLs.
  return isPlainWebUrl(value) ? value : parsedWebUrl(value);
}

/** Whether `webUrl` takes `value` as it is, without parsing it (see PLAIN_WEB_URL). */
export function isPlainWebUrl(value: string): boolean {
  return PLAIN_WEB_URL.test(value) && !DOT_SEGMENT.test(value) && !BARE_PERCENT.test(value);
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
/** A `%` that starts no percent-encoded octet: the parser keeps it, RFC 3986 does not allow it. */
const BARE_PERCENT = /%(?![0-9A-Fa-f]{2})/;
/**
 * What the parser leaves in a path, query or fragment that RFC 3986 allows in none of them (the
 * parser has already encoded space, `"`, `<`, `>` and the other characters of its own sets).
 */
const NOT_IN_URI = /%(?![0-9A-Fa-f]{2})|[[\]\\^`{|}#]/g;
/** What the parser leaves in a host name that RFC 3986 does not allow there (user names and passwords it encodes). */
const NOT_IN_HOST = /["`{}]/g;

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
  const href = url.href;
  // The path starts at the first `/` after `scheme://` (a user name or password has its `/` encoded).
  const pathAt = href.indexOf('/', url.protocol.length + 2);
  const hashAt = href.indexOf('#', pathAt);
  // The parser percent-decodes a host, so an encoded one names the same host.
  const head = href.slice(0, pathAt).replace(NOT_IN_HOST, uriEscape);
  if (hashAt === -1) return head + href.slice(pathAt).replace(NOT_IN_URI, uriEscape);
  // The first `#` starts the fragment; any other is data in it, as the parser reads it.
  return `${head}${href.slice(pathAt, hashAt).replace(NOT_IN_URI, uriEscape)}#${href.slice(hashAt + 1).replace(NOT_IN_URI, uriEscape)}`;
}

function uriEscape(c: string): string {
  return `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
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
