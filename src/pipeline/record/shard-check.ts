import type { BuildRecord, FoundRecord } from './build-record.js';
import type { BuildFingerprint } from '../plan/incremental.js';

/**
 * Whether the parts of a sharded build may be merged (`vidfeeds shards check`, docs/scale.md):
 * every part of one split present once, each built whole and without failures, all from the same
 * database snapshot with the same vidfeeds, configuration, format table and templates. Parts that
 * read different snapshots disagree where no single file shows it: shard 1's sitemap lists a video
 * another shard did not build, a user renamed between two reads is in two parts or in none.
 *
 * Pure: it compares the records found (src/pipeline/build-record.ts); the command reads them.
 */

export interface ShardCheck {
  /** One line per problem, each naming the parts and directories concerned; empty when they agree. */
  problems: string[];
  /** One line: what agrees, or how many problems there are. */
  summary: string;
}

/** At most this many part numbers are listed in one line; the rest are counted. */
const LISTED = 20;

/** How a part is named in a problem: `part 2/8 (/build/part-2)`. */
type Labels = (parts: readonly FoundRecord[]) => string;

/**
 * `records`: every record found; `withoutRecord`: the directories given that hold none. `show`
 * turns a directory into the text the operator gave (relative paths stay relative).
 */
export function checkShards(records: readonly FoundRecord[], withoutRecord: readonly string[], show: (dir: string) => string = (d) => d): ShardCheck {
  const parts = [...records].sort(
    (a, b) => countOf(a.record) - countOf(b.record) || indexOf(a.record) - indexOf(b.record) || (a.dir < b.dir ? -1 : a.dir > b.dir ? 1 : 0),
  );
  const labels: Labels = (group) => group.map((part) => `${partName(part.record)} (${show(part.dir)})`).join(', ');
  const problems = [
    ...withoutRecord.map(
      (dir) => `${show(dir)}: no build record (.vidfeeds-build*.json): the build did not finish there, was made by an older vidfeeds, or the copy left out hidden files`,
    ),
    ...splitProblems(parts, labels, show),
    ...snapshotProblems(parts, labels),
    ...fingerprintProblems(parts, labels),
    ...buildProblems(parts, labels),
  ];
  if (parts.length === 0 && problems.length === 0) problems.push('no build record found: nothing to check');
  if (problems.length > 0) {
    return { problems, summary: `the parts do not agree: ${problems.length} ${problems.length === 1 ? 'problem' : 'problems'}; do not merge them` };
  }
  const first = parts[0]!.record;
  const read = `database ${first.database.id} at change log position ${first.database.position}, vidfeeds ${first.fingerprint.vidfeedsVersion}`;
  const n = countOf(first);
  const summary =
    n === 1
      ? `the whole site was built without failures from ${read}`
      : `all ${n} parts agree: ${read}, one configuration, format table and templates; each part built whole without failures`;
  return { problems, summary };
}

/** One split: every part of N present, none twice. */
function splitProblems(parts: readonly FoundRecord[], labels: Labels, show: (dir: string) => string): string[] {
  const problems: string[] = [];
  const byCount = groupBy(parts, (p) => String(countOf(p.record)));
  if (byCount.size > 1) {
    problems.push(`the parts belong to different splits: ${[...byCount].map(([count, group]) => `into ${count}: ${labels(group)}`).join('; ')}`);
  }
  for (const [count, group] of byCount) {
    const n = Number(count);
    const byIndex = groupBy(group, (p) => String(indexOf(p.record)));
    const missing: number[] = [];
    for (let k = 1; k <= n; k++) if (!byIndex.has(String(k))) missing.push(k);
    if (missing.length > 0) {
      const one = missing.length === 1;
      const listed = missing.slice(0, LISTED).join(', ');
      const more = missing.length > LISTED ? ` and ${missing.length - LISTED} more` : '';
      problems.push(`${one ? 'part' : 'parts'} ${listed}${more} of ${n} ${one ? 'is' : 'are'} missing: no directory given holds a record of ${one ? 'it' : 'them'}`);
    }
    for (const copies of byIndex.values()) {
      if (copies.length > 1) {
        problems.push(`${partName(copies[0]!.record)} is present ${copies.length} times: in ${copies.map((p) => show(p.dir)).join(', ')}; merge only one of them`);
      }
    }
  }
  return problems;
}

/** One snapshot of one database: the same database_id and change log position everywhere. */
function snapshotProblems(parts: readonly FoundRecord[], labels: Labels): string[] {
  const byDatabase = groupBy(parts, (p) => p.record.database.id);
  const bySnapshot = [...groupBy(parts, (p) => `${p.record.database.id} ${p.record.database.position}`).values()];
  if (byDatabase.size > 1) {
    const groups = bySnapshot.map((g) => `database ${g[0]!.record.database.id || '(no database_id)'} at change log position ${g[0]!.record.database.position}: ${labels(g)}`);
    return [`the parts read different databases: ${groups.join('; ')}; build every part from one copy of one database`];
  }
  if (bySnapshot.length > 1) {
    const groups = bySnapshot.map((g) => `position ${g[0]!.record.database.position}: ${labels(g)}`);
    return [`the parts read different snapshots of the database (change log positions differ): ${groups.join('; ')}; rebuild them from one snapshot`];
  }
  return [];
}

/** One vidfeeds, configuration, format table and templates. */
function fingerprintProblems(parts: readonly FoundRecord[], labels: Labels): string[] {
  const problems: string[] = [];
  for (const [key, what] of FINGERPRINT_PARTS) {
    const byValue = groupBy(parts, (p) => p.record.fingerprint[key]);
    if (byValue.size <= 1) continue;
    // Versions are read by people; hashes only need to differ visibly.
    const shown = (value: string) => (key === 'vidfeedsVersion' ? value : `${value.slice(0, 12)}…`);
    problems.push(`the parts were built with different ${what}: ${[...byValue].map(([value, group]) => `${shown(value)}: ${labels(group)}`).join('; ')}`);
  }
  return problems;
}

/** Each part built whole (not `--only`/`--user`) and without failed documents. */
function buildProblems(parts: readonly FoundRecord[], labels: Labels): string[] {
  const problems: string[] = [];
  for (const part of parts) {
    const { partial, failed } = part.record;
    if (partial !== null) {
      const scope = [partial.only !== null && `--only ${partial.only.join(',')}`, partial.user !== null && `--user ${partial.user}`].filter(Boolean).join(' ');
      problems.push(`${labels([part])}: its last build was partial (${scope}), so the part may hold documents of other snapshots; build the part whole`);
    }
    if (failed > 0) problems.push(`${labels([part])}: its last build had ${failed} failed ${failed === 1 ? 'document' : 'documents'}; fix them and build the part again`);
  }
  return problems;
}

const FINGERPRINT_PARTS: ReadonlyArray<readonly [keyof BuildFingerprint, string]> = [
  ['vidfeedsVersion', 'vidfeeds versions'],
  ['codeHash', 'vidfeeds code'],
  ['configHash', 'configurations'],
  ['formatsHash', 'format tables'],
  ['templatesHash', 'templates'],
];

/** A whole-site build is the one part of a split into one. */
function countOf(record: BuildRecord): number {
  return record.shard?.count ?? 1;
}

function indexOf(record: BuildRecord): number {
  return record.shard?.index ?? 1;
}

function partName(record: BuildRecord): string {
  return record.shard === null ? 'the whole site' : `part ${record.shard.index}/${record.shard.count}`;
}

/** Groups in order of first appearance. */
function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group === undefined) groups.set(k, [item]);
    else group.push(item);
  }
  return groups;
}
