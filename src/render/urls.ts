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
