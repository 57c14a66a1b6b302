/**
 * URLs from the database end up in `href` and `src` attributes of pages that embed our documents.
 * Only absolute http(s) URLs are published: anything else (`javascript:`, `data:`, relative or
 * malformed) is treated as absent, so no stored value can run script in a reader's page.
 */
export function webUrl(value: string | null | undefined): string | null {
  if (value === null || value === undefined || value === '') return null;
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
