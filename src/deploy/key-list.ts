import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A list of object keys a deploy reports (written, deleted, not attempted), in bounded memory:
 * the first few thousand are held, the rest go to a temporary file, one JSON string a line, and
 * are read back in order a chunk at a time. The file is unlinked as soon as it is opened, so
 * nothing is left behind whatever ends the process, and closed when the list is collected. A
 * first deploy of a large site reports millions of keys; held as strings they would be most of
 * its memory.
 */
/** Closes a list's file once the list is gone: a long `watch --deploy` makes one per deploy. */
const closeWhenCollected = new FinalizationRegistry<number>((fd) => closeSync(fd));

export class KeyList implements Iterable<string> {
  private held: string[] = [];
  private readonly head: string[] = [];
  private fd: number | null = null;
  private spilledBytes = 0;
  private count = 0;

  constructor(private readonly holdAtMost = 4096) {}

  get length(): number {
    return this.count;
  }

  push(...keys: string[]): void {
    for (const key of keys) this.add(key);
  }

  /** Adds every key of `keys`, in order. */
  pushAll(keys: Iterable<string>): void {
    for (const key of keys) this.add(key);
  }

  /** The first `n` keys (at most the eight kept for messages). */
  first(n: number): string[] {
    return this.head.slice(0, n);
  }

  *[Symbol.iterator](): Iterator<string> {
    for (const lines of this.spilledLines()) for (const line of lines) yield JSON.parse(line) as string;
    yield* this.held;
  }

  /** The list as a JSON array, in pieces of a few hundred kilobytes at most. */
  *jsonPieces(): Iterable<string> {
    yield '[';
    let first = true;
    for (const lines of this.spilledLines()) {
      yield `${first ? '' : ','}${lines.join(',')}`;
      first = false;
    }
    for (let i = 0; i < this.held.length; i += 4096) {
      yield `${first ? '' : ','}${this.held.slice(i, i + 4096).map((key) => JSON.stringify(key)).join(',')}`;
      first = false;
    }
    yield ']';
  }

  private add(key: string): void {
    this.count++;
    if (this.head.length < 8) this.head.push(key);
    this.held.push(key);
    if (this.held.length >= this.holdAtMost) this.spill();
  }

  private spill(): void {
    if (this.fd === null) {
      const folder = mkdtempSync(join(tmpdir(), 'vidfeeds-keys-'));
      const file = join(folder, 'keys');
      this.fd = openSync(file, 'w+', 0o600);
      rmSync(folder, { recursive: true });
      closeWhenCollected.register(this, this.fd);
    }
    const text = Buffer.from(`${this.held.map((key) => JSON.stringify(key)).join('\n')}\n`);
    writeSync(this.fd, text, 0, text.length, this.spilledBytes);
    this.spilledBytes += text.length;
    this.held = [];
  }

  /** The spilled keys' lines (JSON strings), a chunk at a time. */
  private *spilledLines(): Iterable<string[]> {
    if (this.fd === null) return;
    const chunk = Buffer.alloc(256 * 1024);
    let rest = '';
    for (let at = 0; at < this.spilledBytes; ) {
      const read = readSync(this.fd, chunk, 0, Math.min(chunk.length, this.spilledBytes - at), at);
      at += read;
      // A JSON string escapes every control character, so a line ends only at a key's end; a
      // chunk may end inside a multi-byte character, which the last line keeps for the next.
      const text = rest + chunk.toString('latin1', 0, read);
      const end = text.lastIndexOf('\n');
      rest = text.slice(end + 1);
      if (end >= 0) yield text.slice(0, end).split('\n').map((line) => Buffer.from(line, 'latin1').toString('utf8'));
    }
  }
}
