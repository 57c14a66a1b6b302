/**
 * JSON that is safe inside an HTML `<script>` element and in JSONP: `<`, `>` and `&` (so a
 * `</script>` or `<!--` in a value cannot end or bend the element) and U+2028/U+2029 (line
 * terminators in older JavaScript) are written as \uXXXX escapes, which every JSON parser reads
 * back as the same characters.
 */
const UNSAFE_IN_SCRIPT = /[<>&\u2028\u2029]/g;
const SCRIPT_SAFE: Record<string, string> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

export function scriptSafeJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(UNSAFE_IN_SCRIPT, (c) => SCRIPT_SAFE[c]!);
}
