import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { PlannedDocument } from './deploy-plan.js';

/**
 * What a deploy remembers between runs, per target, beside the build state (never in the served
 * tree): the headers it last published, as one fingerprint, and whether the store's ETags are the
 * MD5 of the bytes. While both hold, an object whose listed ETag is the file's MD5 is known to be
 * published as it should be, without asking the store for its headers; otherwise the deploy asks
 * (HEAD) and compares the SHA-256 and headers it stored with the object. Losing this file costs
 * one HEAD per object on the next deploy, never a wrong skip.
 */
export interface TargetRecord {
  headers: string;
  etagsAreMd5: boolean;
  /** The build state the store holds, as of the last deploy that wrote everything it planned. */
  published?: PublishedState;
}

/** Which build of which state a deploy published, from which tree, under which configuration (src/deploy/deploy-basis.ts). */
export interface PublishedState {
  stateId: string;
  build: number;
  out: string;
  config: string;
  compression: string | null;
}

/** Documents a listener has not yet heard of, by file under the tree. */
export interface OwedFiles {
  changed: string[];
  removed: string[];
}

interface RecordFile {
  version: 1;
  targets: Record<string, TargetRecord>;
  /**
   * Per target, per listener (a hub, IndexNow, the `--on-change` command): the documents written
   * or removed that it has not heard of. Recorded before the first write, cleared once delivered.
   */
  owed?: Record<string, Record<string, OwedFiles>>;
}

export class DeployRecord {
  private data: RecordFile = { version: 1, targets: {} };

  constructor(private readonly file: string) {
    try {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as RecordFile;
      if (parsed.version === 1 && typeof parsed.targets === 'object' && parsed.targets !== null) this.data = parsed;
    } catch {
      // Missing or unreadable: the next deploy checks headers with the store.
    }
  }

  get(target: string): TargetRecord | undefined {
    return this.data.targets[target];
  }

  /** Records a target's state, atomically (written beside and renamed). */
  set(target: string, record: TargetRecord): void {
    this.data.targets[target] = record;
    this.save();
  }

  /** What each listener of a target is owed. */
  owed(target: string): Readonly<Record<string, OwedFiles>> {
    return this.data.owed?.[target] ?? {};
  }

  /**
   * Adds documents to what each of `listeners` is owed, and saves before returning: a deploy
   * killed after its first write leaves them recorded. A document changed after it was removed
   * (or removed after it changed) is owed once, as it is now.
   */
  owe(target: string, listeners: readonly string[], changed: readonly string[], removed: readonly string[]): void {
    if (listeners.length === 0 || (changed.length === 0 && removed.length === 0)) return;
    const byListener = ((this.data.owed ??= {})[target] ??= {});
    for (const listener of listeners) {
      const entry = byListener[listener] ?? { changed: [], removed: [] };
      const gone = new Set(removed);
      const now = new Set(changed);
      byListener[listener] = {
        changed: [...new Set([...entry.changed.filter((f) => !gone.has(f)), ...changed])].sort(),
        removed: [...new Set([...entry.removed.filter((f) => !now.has(f)), ...removed])].sort(),
      };
    }
    this.save();
  }

  /** Clears what a listener heard of (or a listener no longer configured, with `delivered` null), and saves. */
  settle(target: string, listener: string, delivered: OwedFiles | null): void {
    const byListener = this.data.owed?.[target];
    const entry = byListener?.[listener];
    if (byListener === undefined || entry === undefined) return;
    const changed = new Set(delivered?.changed ?? entry.changed);
    const removed = new Set(delivered?.removed ?? entry.removed);
    const left = { changed: entry.changed.filter((f) => !changed.has(f)), removed: entry.removed.filter((f) => !removed.has(f)) };
    if (left.changed.length === 0 && left.removed.length === 0) delete byListener[listener];
    else byListener[listener] = left;
    this.save();
  }

  private save(): void {
    mkdirSync(dirname(this.file), { recursive: true });
    const temporary = `${this.file}.${process.pid}.tmp`;
    // Flushed to the disk before it replaces the last one: what is owed outlives a power cut too.
    const fd = openSync(temporary, 'w');
    try {
      writeSync(fd, `${JSON.stringify(this.data, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.file);
  }
}

/**
 * One fingerprint of every header a deploy sets, but for each feed's own URL in its `Link`: it
 * changes when a Content-Type, a Cache-Control, an encoding or the hubs do.
 */
export function headersFingerprint(documents: readonly PlannedDocument[]): string {
  const seen = new Set<string>();
  for (const document of documents) addHeaderLines(seen, document);
  return fingerprintOfHeaderLines(seen);
}

/** Adds a document's header lines to the set a fingerprint is made of (a handful per format, whatever the site's size). */
export function addHeaderLines(seen: Set<string>, document: PlannedDocument): void {
  for (const o of document.objects) {
    seen.add([document.format, o.contentType, o.cacheControl, o.contentEncoding ?? '', (o.link ?? '').replace(/, <[^>]*>; rel="self"$/, '')].join('\t'));
  }
}

export function fingerprintOfHeaderLines(seen: ReadonlySet<string>): string {
  return createHash('sha256').update([...seen].sort().join('\n')).digest('hex');
}
