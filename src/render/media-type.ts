/**
 * What a media type must be to be published as one: an enclosure's, a `media:content`'s, a
 * `<source>`'s `type`. A database holds whatever was typed into it (`mp4`, `video/mp4" onload="x`,
 * an empty string); escaping keeps such a value inside its attribute, but a reader then gets a
 * type that is not one, which podcast apps and feed validators refuse and browsers skip.
 *
 * The form: RFC 6838's `type/subtype`, each a restricted name (a letter or digit, then up to 126
 * letters, digits and `!#$&-^_.+`), then RFC 9110's parameters, `; name=value` with optional white
 * space around the `;` and a value that is a token or a quoted string. Only ASCII: a type is
 * ASCII on the wire, and a value XML cannot carry would be published changed. Every part is
 * matched without backtracking (each repetition starts with a character the one before cannot
 * hold), so a value of a megabyte costs a scan of it.
 */

const NAME = "[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}";
const TOKEN = "[A-Za-z0-9!#$%&'*+.^_`|~-]+";
const QUOTED = '"(?:[\\t !#-\\[\\]-~]|\\\\[\\t -~])*"';
const MEDIA_TYPE = new RegExp(`^${NAME}/${NAME}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|${QUOTED}))*$`);

/** Whether `text` is a media type as `type/subtype` with optional parameters (see above). */
export function isMediaType(text: string): boolean {
  return MEDIA_TYPE.test(text);
}
