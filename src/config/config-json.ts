import { getNodeValue, parseTree, ParseErrorCode, printParseErrorCode, type Node as JsonNode, type ParseError } from 'jsonc-parser';
import type { ConfigProblem } from './config-error.js';
import { settingName } from './config-messages.js';

/** A configuration file's text as JSON: its value, its syntax tree (for positions), and what is wrong with it. */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The file's JSON with every syntax error (not only the first) and every key given twice, each with its line and column. */
export function parseConfigText(text: string, file: string): { value: Json; tree: JsonNode | undefined; syntax: ConfigProblem[]; duplicates: ConfigProblem[] } {
  const errors: ParseError[] = [];
  const tree = parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  // One mistake can raise several errors at one place (a trailing comma: no key, no value): the first says it.
  const syntax = errors
    .filter((e, i) => i === 0 || e.offset !== errors[i - 1]!.offset)
    .map((e) => ({ where: `${file}:${position(text, e.offset)}`, setting: '', problem: `is not valid JSON: ${syntaxProblem(e.error)}` }));
  const problems: ConfigProblem[] = [];
  if (tree === undefined || syntax.length > 0) return { value: {}, tree, syntax, duplicates: problems };
  const duplicates = (node: JsonNode, path: string[]) => {
    if (node.type === 'object') {
      const seen = new Map<string, JsonNode>();
      for (const property of [...(node.children ?? [])]) {
        const [key, value] = property.children ?? [];
        if (key === undefined) continue;
        const name = String(key.value);
        const first = seen.get(name);
        if (first !== undefined) {
          // The last one is the value (as JSON.parse has it), so the first leaves the tree that positions are found in.
          node.children!.splice(node.children!.indexOf(first.parent!), 1);
          problems.push({
            where: `${file}:${position(text, key.offset)}`,
            setting: settingName([...path, name]),
            problem: `is given twice (first at line ${position(text, first.offset).split(':')[0]})`,
          });
        }
        seen.set(name, key);
        if (value !== undefined) duplicates(value, [...path, name]);
      }
    } else if (node.type === 'array') {
      (node.children ?? []).forEach((child, i) => duplicates(child, [...path, String(i)]));
    }
  };
  duplicates(tree, []);
  return { value: getNodeValue(tree) as Json, tree, syntax, duplicates: problems };
}

function syntaxProblem(code: ParseErrorCode): string {
  const words: Partial<Record<ParseErrorCode, string>> = {
    [ParseErrorCode.InvalidSymbol]: 'unexpected character',
    [ParseErrorCode.InvalidNumberFormat]: 'a badly written number',
    [ParseErrorCode.PropertyNameExpected]: 'a key in double quotes expected (a comma too many?)',
    [ParseErrorCode.ValueExpected]: 'a value expected',
    [ParseErrorCode.ColonExpected]: 'a colon expected',
    [ParseErrorCode.CommaExpected]: 'a comma expected',
    [ParseErrorCode.CloseBraceExpected]: '} expected',
    [ParseErrorCode.CloseBracketExpected]: '] expected',
    [ParseErrorCode.EndOfFileExpected]: 'nothing more expected',
    [ParseErrorCode.InvalidCommentToken]: 'JSON has no comments',
    [ParseErrorCode.UnexpectedEndOfComment]: 'JSON has no comments',
    [ParseErrorCode.UnexpectedEndOfString]: 'the string never ends',
    [ParseErrorCode.UnexpectedEndOfNumber]: 'the number never ends',
    [ParseErrorCode.InvalidUnicode]: 'a bad \\u escape',
    [ParseErrorCode.InvalidEscapeCharacter]: 'a bad escape',
    [ParseErrorCode.InvalidCharacter]: 'a character that must be escaped in a string',
  };
  return words[code] ?? printParseErrorCode(code);
}

/** `line:column`, both from 1, of an offset in the text. */
export function position(text: string, offset: number): string {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return `${line}:${offset - start + 1}`;
}

export function isObject(value: Json | undefined): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
