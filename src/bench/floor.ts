import { closeSync, mkdirSync, openSync, readFileSync, readSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { STAGING_DIR } from '../build/output-writer.js';

/**
 * The floor: writes the bytes of a finished build to the same paths under a fresh directory, the
 * way DirectoryWriter does (write beside, in the staging folder on the same file system, rename
 * into place, mkdir when the directory changes) and nothing else. The bytes come from a pack made beforehand (see pack.ts),
 * read sequentially in large chunks, which costs next to nothing beside creating the files.
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
const staging = join(out, STAGING_DIR);
mkdirSync(staging, { recursive: true });
let counter = 0;
let lastDir = '';
for (const line of index) {
  const tab = line.indexOf('\t');
  const body = next(Number(line.slice(0, tab)));
  const full = join(out, line.slice(tab + 1));
  const dir = dirname(full);
  if (dir !== lastDir) {
    mkdirSync(dir, { recursive: true });
    lastDir = dir;
  }
  const temp = join(staging, `${process.pid}-${counter++}`);
  const fd = openSync(temp, 'w', 0o644);
  let offset = 0;
  while (offset < body.length) offset += writeSync(fd, body, offset, body.length - offset);
  closeSync(fd);
  renameSync(temp, full);
}
closeSync(data);
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
process.stdout.write(`BENCH ${JSON.stringify({ exitCode: 0, files: index.length, seconds, maxRssKb: process.resourceUsage().maxRSS })}\n`);
