import { closeSync, mkdirSync, openSync, readFileSync, readSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { FilePlacer, STAGING_DIR } from '../pipeline/write/output-writer.js';

/**
 * The floor: writes the bytes of a finished build to the same paths under a fresh directory, with
 * the same system calls as DirectoryWriter (FilePlacer: a mkdir for each new directory, write
 * beside in the staging folder, rename into place) and nothing else. The bytes come from a pack
 * made beforehand (see pack.ts), read sequentially in large chunks, which costs next to nothing
 * beside creating the files.
 * Usage: node dist/bench/floor.js <pack> <out dir>
 */
const [pack, out] = process.argv.slice(2) as [string, string];
const index = readFileSync(`${pack}.index`, 'utf8').split('\n').filter(Boolean);
const data = openSync(`${pack}.data`, 'r');
const CHUNK = 16 * 1024 * 1024;
let chunk = Buffer.alloc(0);
let at = 0;

function next(size: number): Buffer {
  if (at + size > chunk.length) {
    const rest = chunk.subarray(at);
    const fresh = Buffer.allocUnsafe(Math.max(CHUNK, size));
    rest.copy(fresh);
    const read = readSync(data, fresh, rest.length, fresh.length - rest.length, null);
    chunk = fresh.subarray(0, rest.length + read);
    at = 0;
  }
  const body = chunk.subarray(at, at + size);
  at += size;
  return body;
}

const started = process.hrtime.bigint();
const root = resolve(out);
mkdirSync(join(root, STAGING_DIR), { recursive: true });
const placer = new FilePlacer(root, String(process.pid));
for (const line of index) {
  const tab = line.indexOf('\t');
  const body = next(Number(line.slice(0, tab)));
  placer.place(join(root, line.slice(tab + 1)), body);
}
closeSync(data);
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const usage = process.resourceUsage();
process.stdout.write(`BENCH ${JSON.stringify({ exitCode: 0, files: index.length, seconds, maxRssKb: usage.maxRSS, userMs: usage.userCPUTime / 1000, systemMs: usage.systemCPUTime / 1000 })}\n`);
