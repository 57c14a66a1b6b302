import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
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
}

interface RecordFile {
  version: 1;
  targets: Record<string, TargetRecord>;
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
    mkdirSync(dirname(this.file), { recursive: true });
    const temporary = `${this.file}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(this.data, null, 2)}\n`);
    renameSync(temporary, this.file);
  }
}

/**
 * One fingerprint of every header a deploy sets, but for each feed's own URL in its `Link`: it
 * changes when a Content-Type, a Cache-Control, an encoding or the hubs do.
 */
export function headersFingerprint(documents: readonly PlannedDocument[]): string {
  const seen = new Set<string>();
  for (const document of documents) {
    for (const o of document.objects) {
      seen.add([document.format, o.contentType, o.cacheControl, o.contentEncoding ?? '', (o.link ?? '').replace(/, <[^>]*>; rel="self"$/, '')].join('\t'));
    }
  }
  return createHash('sha256').update([...seen].sort().join('\n')).digest('hex');
}
