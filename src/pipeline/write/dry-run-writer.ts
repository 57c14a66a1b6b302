import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { holdsServedEntries, resolveInside, type OutputWriter } from './output-writer.js';

/**
 * The writer of `build --dry-run`: it answers questions about the output directory from the disk
 * (sizes, bytes, whether it is empty), so the build compares as a real one does, and it writes and
 * removes nothing: it remembers only what it was asked to remove, so that the build sees those
 * files gone (the report counts the rest). It creates no folder, not even the staging folder.
 */
export class DryRunWriter implements OutputWriter {
  readonly root: string;
  private readonly gone = new Set<string>();

  constructor(root: string) {
    this.root = resolve(root);
  }

  write(path: string, _body: Buffer): void {
    resolveInside(this.root, path);
    this.gone.delete(path);
  }

  size(path: string): number | null {
    if (this.gone.has(path)) return null;
    const stat = statSync(resolveInside(this.root, path), { throwIfNoEntry: false });
    return stat?.isFile() ? stat.size : null;
  }

  holds(path: string, body: Buffer): boolean {
    if (this.gone.has(path)) return false;
    const full = resolveInside(this.root, path);
    const stat = statSync(full, { throwIfNoEntry: false });
    return stat !== undefined && stat.isFile() && stat.size === body.length && readFileSync(full).equals(body);
  }

  /** Says whether a real build would have found the file to remove. */
  remove(path: string): boolean {
    if (this.size(path) === null) return false;
    this.gone.add(path);
    return true;
  }

  isEmpty(): boolean {
    return statSync(this.root, { throwIfNoEntry: false }) === undefined || !holdsServedEntries(this.root);
  }

  close(): void {}
}
