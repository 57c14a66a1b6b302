/**
 * JSONP for oEmbed's `callback` (seed section 4): the name is checked strictly, since whatever it
 * holds runs in the page that asked. Allowed: a dotted path of ASCII JavaScript identifiers
 * (`cb`, `jQuery123_456`, `my.ns.handle`), at most 128 characters, no reserved word. Everything
 * else (parentheses, brackets, quotes, `;`, spaces, Unicode escapes, `__proto__`) is refused.
 */

export const MAX_CALLBACK_LENGTH = 128;

const IDENTIFIER_PATH = /^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*$/;

/** ECMAScript reserved words and literals, and names that reach into object prototypes. */
const FORBIDDEN_NAMES = new Set(
  (
    'break case catch class const continue debugger default delete do else enum export extends false finally for ' +
    'function if import in instanceof new null return super switch this throw true try typeof var void while with ' +
    'yield let static implements interface package private protected public await arguments eval ' +
    '__proto__ constructor prototype __defineGetter__ __defineSetter__ __lookupGetter__ __lookupSetter__'
  ).split(' '),
);

/** Why `name` cannot be a JSONP callback, or null when it can. */
export function callbackProblem(name: string): string | null {
  if (name.length > MAX_CALLBACK_LENGTH) return `is longer than ${MAX_CALLBACK_LENGTH} characters`;
  if (!IDENTIFIER_PATH.test(name)) return 'must be a JavaScript function name such as handle or my.handle (letters, digits, _ and $, dots between)';
  const reserved = name.split('.').find((part) => FORBIDDEN_NAMES.has(part));
  if (reserved !== undefined) return `must not use the reserved name ${reserved}`;
  return null;
}

/**
 * The script: a comment first (so the response never starts with bytes a caller chose, the defence
 * against content-sniffing attacks such as Rosetta Flash), then the call. U+2028 and U+2029 are
 * escaped: JSON allows them raw, older JavaScript engines do not.
 */
export function jsonpBody(callback: string, json: string): string {
  return `/**/ ${callback}(${json.replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')});`;
}
