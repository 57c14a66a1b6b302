import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { PlannedDocument } from './deploy-plan.js';
import { OwedStore, owedStoreFileOf } from './owed-store.js';

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

/** Documents a listener had not yet heard of, by file under the tree, as an earlier vidfeeds kept them in the record: read as found. */
interface OwedFiles {
  changed?: unknown;
  removed?: unknown;
}

interface RecordFile {
  version: 1;
  targets: Record<string, TargetRecord>;
  /**
   * Per target, per listener: what an earlier vidfeeds owed, kept in this file. It moves to the
   * owed store (src/deploy/owed-store.ts) when the record is opened, and the file is written without it.
   */
  owed?: Record<string, Record<string, OwedFiles>>;
}

export class DeployRecord {
  private data: RecordFile = { version: 1, targets: {} };
  /** What each listener of each target is owed, beside this file (its name less `.json`, plus `.owed.sqlite`). */
  readonly owed: OwedStore;

  constructor(private readonly file: string) {
    this.owed = new OwedStore(owedStoreFileOf(file));
    try {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as RecordFile;
      if (parsed.version === 1 && typeof parsed.targets === 'object' && parsed.targets !== null) this.data = parsed;
    } catch {
      // Missing or unreadable: the next deploy checks headers with the store.
    }
    if (this.data.owed !== undefined) this.moveOwed(this.data.owed);
  }

  get(target: string): TargetRecord | undefined {
    return this.data.targets[target];
  }

  /** Records a target's state, atomically (written beside and renamed). */
  set(target: string, record: TargetRecord): void {
    this.data.targets[target] = record;
    this.save();
  }

  close(): void {
    this.owed.close();
  }

  /**
   * Moves what an earlier vidfeeds owed into the owed store, then writes the record without it.
   * Killed in between, the next open moves the same again: owing a document twice is owing it once.
   */
  private moveOwed(owed: NonNullable<RecordFile['owed']>): void {
    for (const [target, byListener] of Object.entries(owed)) {
      for (const [listener, files] of Object.entries(byListener)) {
        const heardBy = [listener];
        const entries = (list: unknown, removed: boolean) => (Array.isArray(list) ? list : []).filter((file) => typeof file === 'string').map((file: string) => ({ file, removed, heardBy }));
        this.owed.owe(target, heardBy, [...entries(files?.changed, false), ...entries(files?.removed, true)]);
      }
    }
    delete this.data.owed;
    this.save();
  }

  private save(): void {
    mkdirSync(dirname(this.file), { recursive: true });
    const temporary = `${this.file}.${process.pid}.tmp`;
    // Flushed to the disk before it replaces the last one.
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
