/**
 * Rows a sync skips, and values it replaces, summarised: a site's known bad rows come back on
 * every sync, and one line each would bury what is new. Messages of one kind (their table and
 * reason, with numbers and quoted values left out) make one line: how many, and the first few
 * named. `--log-level debug` names every one.
 */

/** Messages named in full per kind. */
export const NAMED_PER_KIND = 3;

interface Kind {
  first: string[];
  count: number;
}

export class SkipSummary {
  private readonly kinds = new Map<string, Kind>();

  /** Counts `message`; `kind` is what groups it with others (the table and the reason's words). */
  add(kind: string, message: string): void {
    const key = kindOf(kind);
    let entry = this.kinds.get(key);
    if (entry === undefined) {
      entry = { first: [], count: 0 };
      this.kinds.set(key, entry);
    }
    entry.count++;
    if (entry.first.length < NAMED_PER_KIND) entry.first.push(message);
  }

  /** One line per kind: `what`, the count and the first few messages. */
  lines(what: string): string[] {
    return [...this.kinds.values()].map(({ first, count }) =>
      count === 1 ? `${what}: ${first[0]}` : `${what} ${count} times, e.g. ${first.join('; ')}${count > first.length ? `; and ${count - first.length} more like them (--log-level debug names each)` : ''}`,
    );
  }
}

/** A message's kind: its words, without the numbers and quoted values that name one row. */
function kindOf(text: string): string {
  return text.replace(/"(?:[^"\\]|\\.)*"|'[^']*'|-?\d+(\.\d+)?/g, '#');
}
