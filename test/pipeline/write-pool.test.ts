import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import type * as OutputWriterModule from '../../src/pipeline/write/output-writer.js';
import type * as WritePoolModule from '../../src/pipeline/threads/write-pool.js';
import { useTempDir } from '../helpers/temp-dir.js';

// The worker thread runs compiled JavaScript: these tests use dist/ (`npm test` compiles first),
// typed by the sources they were compiled from.
const { DirectoryWriter } = (await import('../../dist/pipeline/write/output-writer.js' as string)) as typeof OutputWriterModule;
const { ThreadedDirectoryWriter } = (await import('../../dist/pipeline/threads/write-pool.js' as string)) as typeof WritePoolModule;


function tree(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else out.set(relative(root, full), readFileSync(full, 'utf8'));
    }
  };
  walk(root);
  return out;
}

describe('ThreadedDirectoryWriter', () => {
  it('writes the same files as DirectoryWriter, all on disk after flush, and leaves no staging behind', () => {
    const dir = useTempDir();
    const threaded = new ThreadedDirectoryWriter(join(dir, 'threaded'));
    const direct = new DirectoryWriter(join(dir, 'direct'));
    // Enough files and bytes for many batches and for the in-flight limit to be reached.
    for (let i = 0; i < 3000; i++) {
      const path = `user${i % 700}/f${Math.floor(i / 700)}/index.xml`;
      // Now and then a document larger than a batch's memory (a big sitemap).
      const size = i % 1000 === 999 ? 700_000 + i : i % 997;
      const body = Buffer.from(`<doc n="${i}">${'x'.repeat(size)}é</doc>\n`);
      threaded.write(path, body);
      direct.write(path, body);
    }
    threaded.flush();
    expect(threaded.size('user3/f3/index.xml')).toBe(direct.size('user3/f3/index.xml'));
    expect(threaded.remove('user0/f0/index.xml')).toBe(true);
    direct.remove('user0/f0/index.xml');
    threaded.close();
    direct.close();
    const a = tree(join(dir, 'threaded'));
    expect(a.size).toBe(2999);
    expect(a).toEqual(tree(join(dir, 'direct')));
  });

  it('writes a large body (a sitemap part) itself, at once, rather than leave it to the worker to hold', () => {
    const dir = useTempDir();
    const root = join(dir, 'out');
    const writer = new ThreadedDirectoryWriter(root);
    // Keep the worker busy with batches of small files, then a body of megabytes: it is on disk
    // when write() returns (it was never queued for the worker), with no flush by the caller.
    for (let i = 0; i < 64 * 8; i++) writer.write(`small/f${i}.xml`, Buffer.from(`<f>${i}</f>`));
    const large = Buffer.alloc(3 * 1024 * 1024, 'x');
    writer.write('sitemap-1.xml', large);
    expect(existsSync(join(root, 'sitemap-1.xml'))).toBe(true);
    expect(readFileSync(join(root, 'sitemap-1.xml')).equals(large)).toBe(true);
    writer.close();
    const files = tree(root);
    expect(files.size).toBe(64 * 8 + 1);
    expect(files.get('small/f511.xml')).toBe('<f>511</f>');
  });

  it('refuses paths outside the output directory at once, like DirectoryWriter', () => {
    const dir = useTempDir();
    const writer = new ThreadedDirectoryWriter(join(dir, 'out'));
    expect(() => writer.write('../escape.xml', Buffer.from('x'))).toThrow(/outside the output directory/);
    writer.close();
  });

  it.each([
    ['on the thread', { slots: 2, slotBytes: 1024, batchFiles: 1 }],
    ['before the thread starts', { slots: 2, slotBytes: 1024, batchFiles: 64 }],
  ])('reports a failed write %s, naming the file, by the next flush at the latest', (_, shape) => {
    const dir = useTempDir();
    const root = join(dir, 'out');
    const writer = new ThreadedDirectoryWriter(root, shape);
    // A directory where the file should go: the rename into place fails.
    mkdirSync(join(root, 'alice/rss/index.rss'), { recursive: true });
    // On the thread, the worker may report before the write call returns (it waits for a free
    // slot and reads reports then) or only at the flush: which one is a race, and either is fine.
    expect(() => {
      writer.write('alice/rss/index.rss', Buffer.from('<rss/>'));
      writer.flush();
    }).toThrow(/cannot write .*alice\/rss\/index\.rss/);
    expect(writer.threadStarted).toBe(shape.batchFiles === 1);
    writer.close();
  });
});

describe('ThreadedDirectoryWriter, while writes are under way', () => {
  it('reuses the slots of its ring only once their files are written', () => {
    const dir = useTempDir();
    // A small ring wraps around hundreds of times, with documents that fill or overflow a slot.
    const threaded = new ThreadedDirectoryWriter(join(dir, 'threaded'), { slots: 2, slotBytes: 64, batchFiles: 3 });
    const direct = new DirectoryWriter(join(dir, 'direct'));
    for (let i = 0; i < 1500; i++) {
      const path = `u${i % 40}/f${Math.floor(i / 40)}/index.xml`;
      const body = Buffer.from(`${i}:${'abcdefghij'.repeat(i % 9)}`);
      threaded.write(path, body);
      direct.write(path, body);
    }
    threaded.close();
    direct.close();
    expect(tree(join(dir, 'threaded'))).toEqual(tree(join(dir, 'direct')));
  });

  it('answers for a file it is still writing as for one it has written', () => {
    const dir = useTempDir();
    const writer = new ThreadedDirectoryWriter(join(dir, 'out'));
    const body = Buffer.from('<doc/>');
    writer.write('alice/rss/index.rss', body);
    // No flush: the answers must wait for that one write, whichever batch it is in.
    expect(writer.holds('alice/rss/index.rss', body)).toBe(true);
    for (let i = 0; i < 500; i++) writer.write(`u${i}/rss/index.rss`, body);
    expect(writer.size('u499/rss/index.rss')).toBe(body.length);
    writer.close();
  });

  it('writes into a folder again after a removal emptied and removed it', () => {
    const dir = useTempDir();
    const root = join(dir, 'out');
    const writer = new ThreadedDirectoryWriter(root);
    writer.write('bob/atom/index.atom', Buffer.from('one'));
    expect(writer.remove('bob/atom/index.atom')).toBe(true);
    writer.write('bob/atom/index.atom', Buffer.from('two'));
    writer.flush();
    expect(readFileSync(join(root, 'bob/atom/index.atom'), 'utf8')).toBe('two');
    writer.close();
  });
});

describe('ThreadedDirectoryWriter, for a few documents', () => {
  it('writes them without starting the thread, and starts it once a batch fills', () => {
    const dir = useTempDir();
    const root = join(dir, 'out');
    const writer = new ThreadedDirectoryWriter(root, { slots: 2, slotBytes: 1024, batchFiles: 4 });
    for (let i = 0; i < 3; i++) writer.write(`u${i}/rss/index.rss`, Buffer.from(`<rss>${i}</rss>`));
    expect(writer.holds('u2/rss/index.rss', Buffer.from('<rss>2</rss>'))).toBe(true);
    writer.flush();
    expect(writer.threadStarted).toBe(false);
    expect(readFileSync(join(root, 'u0/rss/index.rss'), 'utf8')).toBe('<rss>0</rss>');
    for (let i = 3; i < 9; i++) writer.write(`u${i}/rss/index.rss`, Buffer.from(`<rss>${i}</rss>`));
    expect(writer.threadStarted).toBe(true);
    writer.close();
    expect(tree(root).size).toBe(9);
  });

  it('writes its first batches itself when told to, and starts the thread at the batch after them', () => {
    const dir = useTempDir();
    const root = join(dir, 'out');
    const writer = new ThreadedDirectoryWriter(root, { slots: 2, slotBytes: 1024, batchFiles: 4, batchesHere: 2 });
    for (let i = 0; i < 8; i++) writer.write(`u${i}/rss/index.rss`, Buffer.from(`<rss>${i}</rss>`));
    // Two full batches, written here: on disk already, and no thread.
    expect(writer.threadStarted).toBe(false);
    expect(readFileSync(join(root, 'u7/rss/index.rss'), 'utf8')).toBe('<rss>7</rss>');
    for (let i = 8; i < 12; i++) writer.write(`u${i}/rss/index.rss`, Buffer.from(`<rss>${i}</rss>`));
    expect(writer.threadStarted).toBe(true);
    writer.close();
    expect(tree(root).size).toBe(12);
    expect(readFileSync(join(root, 'u11/rss/index.rss'), 'utf8')).toBe('<rss>11</rss>');
  });

  it('counts what it writes itself in files: a few large files do not start the thread', () => {
    const dir = useTempDir();
    const root = join(dir, 'out');
    const writer = new ThreadedDirectoryWriter(root, { slots: 2, slotBytes: 1024, batchFiles: 4, batchesHere: 2 });
    // Counts the writer's attempts to start its thread, whether or not the thread then runs.
    const inside = writer as unknown as { startWorker(): boolean };
    const start = inside.startWorker.bind(writer);
    let starts = 0;
    inside.startWorker = () => (starts++, start());
    // Two do not fit one slot's bytes: a batch each, as sitemap parts and their forms make them.
    for (let i = 0; i < 6; i++) writer.write(`sitemap-users-${i}.xml`, Buffer.alloc(700, 'x'));
    writer.flush();
    expect(starts).toBe(0);
    // Past two batches' worth of files (8), the thread is asked for.
    for (let i = 0; i < 4; i++) writer.write(`u${i}/rss/index.rss`, Buffer.from(`<rss>${i}</rss>`));
    writer.flush();
    expect(starts).toBe(1);
    writer.close();
    expect(tree(root).size).toBe(10);
  });
});

describe('a write thread that stops', () => {
  // Node marks a stopped worker (threadId -1) only on its parent's event loop, which a build that
  // waits synchronously never runs: the writer must notice from the thread's silence.
  const stop = async (writer: object) => {
    await (writer as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
  };

  it('fails the build\'s writes, naming the cause, instead of leaving it waiting for ever', async () => {
    const dir = useTempDir();
    const writer = new ThreadedDirectoryWriter(join(dir, 'out'), { slots: 2, slotBytes: 64, batchFiles: 1, stallMs: 300 });
    writer.write('alice/rss/index.rss', Buffer.from('<rss/>'));
    writer.flush();
    expect(writer.threadStarted).toBe(true);
    await stop(writer);
    expect(() => {
      for (let i = 0; i < 10; i++) writer.write(`u${i}/rss/index.rss`, Buffer.from('<rss/>'));
      writer.flush();
    }).toThrow(/the write thread has finished nothing for 0\.3 s: it has stopped/);
    expect(() => writer.close()).toThrow(/finished nothing/);
  });
});

describe('DirectoryWriter folders', () => {
  it('makes every folder, also after it has forgotten the ones it made', () => {
    const dir = useTempDir();
    const root = join(dir, 'out');
    const writer = new DirectoryWriter(root);
    // More folders than a DirectoryMaker remembers, then siblings of the first ones.
    for (let i = 0; i < 5000; i++) writer.write(`u${i}/rss/index.rss`, Buffer.from(String(i)));
    writer.write('u0/atom/index.atom', Buffer.from('atom'));
    writer.write('v1/oembed/json/index.json', Buffer.from('{}'));
    writer.close();
    expect(readFileSync(join(root, 'u4999/rss/index.rss'), 'utf8')).toBe('4999');
    expect(readFileSync(join(root, 'u0/atom/index.atom'), 'utf8')).toBe('atom');
    expect(readFileSync(join(root, 'v1/oembed/json/index.json'), 'utf8')).toBe('{}');
  });
});
