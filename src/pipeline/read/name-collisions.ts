import { foldedName, showName } from '../../paths/names.js';

/**
 * Usernames and video ids that are distinct here but would be one file on a case-insensitive or
 * Unicode-normalising file system (macOS, Windows, some sync tools): `Alice` and `alice`, or `é`
 * precomposed and decomposed. Users and videos share the top of the tree, so a user and a video
 * collide as two users do. The build writes both (the tree is made on the build machine's file
 * system, where they are two directories); copied to such a file system, one would take the
 * other's place, so each group is reported with every row named (docs/database.md).
 *
 * Two passes over the names, streamed: the first keeps only the names that are not already in
 * their folded form (every collision has at least one: two different names cannot both equal the
 * one form they share), the second finds the names equal to the folded form of one of those.
 */

export interface NamedRow {
  kind: 'user' | 'video';
  id: number;
  name: string;
}

/** Groups of two or more rows whose names fold to one, in the order the names were read. */
export function nameCollisions(names: () => Iterable<NamedRow>): NamedRow[][] {
  const byFolded = new Map<string, NamedRow[]>();
  for (const row of names()) {
    const folded = foldedName(row.name);
    if (folded === row.name) continue;
    const group = byFolded.get(folded);
    if (group === undefined) byFolded.set(folded, [row]);
    else group.push(row);
  }
  if (byFolded.size === 0) return [];
  for (const row of names()) {
    const group = byFolded.get(row.name);
    if (group !== undefined) group.push(row);
  }
  // A user and a video of one name share a directory by design (their documents do not collide).
  return [...byFolded.values()].filter((group) => new Set(group.map((row) => row.name)).size > 1);
}

export function describeCollision(group: readonly NamedRow[]): string {
  const rows = group.map((row) => `${row.kind} ${showName(row.name)} (${row.kind === 'user' ? 'users' : 'videos'} id=${row.id})`);
  return (
    `${rows.join(' and ')} would be one directory on a case-insensitive or Unicode-normalising file system ` +
    '(macOS, Windows): both are written here; rename one before copying the tree to such a file system'
  );
}
