/** A small N-Triples reader for rapper's output: enough to look triples up in tests. */

export interface Triple {
  s: string;
  p: string;
  /** A URI or blank node as written (`<...>` stripped), or a literal's unescaped text. */
  o: string;
  literal: boolean;
}

function unescape(text: string): string {
  return text.replace(/\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)/g, (_, e: string) => {
    if (e[0] === 'u' || e[0] === 'U') return String.fromCodePoint(parseInt(e.slice(1), 16));
    return ({ n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\' } as Record<string, string>)[e] ?? e;
  });
}

function term(text: string): string {
  return text.startsWith('<') ? text.slice(1, -1) : text;
}

export function parseNTriples(text: string): Triple[] {
  const triples: Triple[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const m = /^(\S+) (\S+) (.*) \.$/.exec(line);
    if (!m) throw new Error(`not an N-Triples line: ${line}`);
    const object = m[3]!;
    const literal = /^"((?:[^"\\]|\\.)*)"(?:@[A-Za-z-]+|\^\^<[^>]+>)?$/.exec(object);
    triples.push({ s: term(m[1]!), p: term(m[2]!), o: literal ? unescape(literal[1]!) : term(object), literal: literal !== null });
  }
  return triples;
}

/** The objects of (subject, predicate). */
export function objects(triples: Triple[], s: string, p: string): string[] {
  return triples.filter((t) => t.s === s && t.p === p).map((t) => t.o);
}
