import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/** A file of an output tree: its bytes and what tells a rewrite from an untouched file. */
export interface TreeFile {
  body: Buffer;
  mtimeNs: bigint;
  ino: bigint;
}

/** Every served file under `root` (dot-named entries, such as a writer's staging, left out), by `/`-separated path. */
export function readTree(root: string): Map<string, TreeFile> {
  const files = new Map<string, TreeFile>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.name.startsWith('.')) continue;
      if (entry.isDirectory()) {
        walk(full);
      } else {
        const stat = statSync(full, { bigint: true });
        files.set(relative(root, full).split(sep).join('/'), { body: readFileSync(full), mtimeNs: stat.mtimeNs, ino: stat.ino });
      }
    }
  };
  walk(root);
  return new Map([...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * The bytes of a file with the sitemap's `<lastmod>` values left out. A lastmod is the moment the
 * build that changed a document ran, so a tree built step by step and a reference built in one go
 * at another moment differ there and only there (test/pipeline/sitemap-lastmod.test.ts holds the
 * dates themselves).
 */
export function undated(path: string, body: Buffer): Buffer {
  if (!/^sitemap[^/]*\.xml$/.test(path)) return body;
  return Buffer.from(body.toString('utf8').replace(/<lastmod>[^<]*<\/lastmod>/g, ''));
}

/**
 * Differences between two trees' bytes, as readable lines (empty when identical). Sitemap lastmod
 * values are left out of the comparison: they say when a build ran, which two trees built at
 * different moments never share.
 */
export function treeDifferences(actual: Map<string, TreeFile>, expected: Map<string, TreeFile>, limit = 20): string[] {
  const lines: string[] = [];
  for (const [path, file] of expected) {
    const other = actual.get(path);
    if (other === undefined) lines.push(`missing: ${path}`);
    else if (!undated(path, other.body).equals(undated(path, file.body))) lines.push(`differs: ${path}`);
  }
  for (const path of actual.keys()) if (!expected.has(path)) lines.push(`extra: ${path}`);
  return lines.slice(0, limit);
}

/** Files whose bytes did not change between two readings of one tree but that were rewritten. */
export function touchedButSame(before: Map<string, TreeFile>, after: Map<string, TreeFile>): string[] {
  const lines: string[] = [];
  for (const [path, file] of before) {
    const now = after.get(path);
    if (now !== undefined && now.body.equals(file.body) && (now.mtimeNs !== file.mtimeNs || now.ino !== file.ino)) lines.push(path);
  }
  return lines;
}

/**
 * Holds that every file of `tree`, a tree caught between two builds, is whole: either its bytes
 * from `before` or those of `after` (a reference of the finished build, lastmod aside). Returns
 * how many were old only and new only, so a test can hold that it caught the build midway.
 */
export function oldOrNew(tree: ReadonlyMap<string, Buffer>, before: ReadonlyMap<string, Buffer>, after: ReadonlyMap<string, Buffer>): { old: number; fresh: number } {
  let old = 0;
  let fresh = 0;
  for (const [path, body] of tree) {
    const isOld = before.get(path)?.equals(body) ?? false;
    const reference = after.get(path);
    const isNew = reference !== undefined && undated(path, reference).equals(undated(path, body));
    if (!isOld && !isNew) throw new Error(`${path} is neither the old nor the new file`);
    if (isOld && !isNew) old++;
    if (isNew && !isOld) fresh++;
  }
  return { old, fresh };
}
