import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { undated } from '../helpers/tree.js';
import { describe, expect, it } from 'vitest';
import { FORMATS } from '../../src/formats/registry.js';
import { SITEMAP_LIMITS } from '../../src/formats/sitemap.js';
import { BuildState } from '../../src/pipeline/build-state.js';
import { MemoryWriter } from '../../src/pipeline/write/output-writer.js';
import { ownsKey, parseShard, shardOf } from '../../src/shard/shard.js';
import { readTree } from '../helpers/cli.js';
import { buildInMemory, createDemoDb, insertUser } from '../helpers/site-fixture.js';
import { cleanUpAfterTest, useTempDir } from '../helpers/temp-dir.js';

function demo(users = 40) {
  const f = createDemoDb({ users, seed: 11 });
  return f;
}

const SITE_FILES = ['sitemap.xml', 'robots.txt', 'opensearch.xml', 'crossdomain.xml'];

describe('shard assignment', () => {
  it('is SHA-1 of the key, so every machine and Node version agrees (pinned values)', () => {
    // Expected values computed with Python's hashlib (SHA-1 of the UTF-8 bytes, first 4 bytes big-endian).
    expect(shardOf('alice', 1)).toBe(1);
    expect(shardOf('alice', 3)).toBe(1); // 522b276a
    expect(shardOf('🎬astral', 7)).toBe(7); // 456e6ac4
    expect(shardOf('مريم', 5)).toBe(1); // ee98a55a
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[shardOf(`user${i}`, 4) - 1]!++;
    for (const c of counts) expect(c).toBeGreaterThan(850);
  });

  it('parses K/N and explains what is wrong', () => {
    expect(parseShard('2/3')).toEqual({ index: 2, count: 3 });
    expect(parseShard('0/3')).toHaveProperty('problem', 'the shard must be from 1 to 3, not 0');
    expect(parseShard('4/3')).toHaveProperty('problem');
    expect(parseShard('1/0')).toHaveProperty('problem');
    expect(parseShard('a/b')).toHaveProperty('problem');
    expect(parseShard('1/2/3')).toHaveProperty('problem');
  });
});

describe('sharded builds', () => {
  it('give disjoint parts whose union is byte-identical to a full build; site files only in 1/3', () => {
    const { file } = demo();
    const full = buildInMemory(file).writer.files;
    const parts = [1, 2, 3].map((index) => buildInMemory(file, { shard: { index, count: 3 } }));
    const union = new Map<string, Buffer>();
    for (const [i, part] of parts.entries()) {
      expect(part.writer.files.size, `shard ${i + 1} is not empty`).toBeGreaterThan(0);
      for (const [path, body] of part.writer.files) {
        expect(union.has(path), `${path} is in two shards`).toBe(false);
        union.set(path, body);
        // Everything under one top-level directory belongs to the shard of that name.
        const top = path.split('/')[0]!;
        if (!SITE_FILES.includes(path)) expect(ownsKey({ index: i + 1, count: 3 }, top), path).toBe(true);
      }
    }
    expect([...union.keys()].sort()).toEqual([...full.keys()].sort());
    // Built at other moments than the full build: the sitemap's lastmod dates are left out.
    for (const [path, body] of full) expect(undated(path, union.get(path)!).equals(undated(path, body)), path).toBe(true);
    for (const site of SITE_FILES) {
      expect(parts[0]!.writer.files.has(site), site).toBe(true);
      expect(parts[1]!.writer.files.has(site) || parts[2]!.writer.files.has(site), site).toBe(false);
    }
    // Rows skipped for their names are reported once, by the shard that owns them.
    const skipped = parts.reduce((sum, p) => sum + p.report.skippedCount, 0);
    expect(skipped).toBe(buildInMemory(file).report.skippedCount);
  });

  it('prune only their own part: a user gone from shard 2 is removed by shard 2 and by no other', () => {
    const { db, file } = demo(20);
    // Find two new users that land in different shards of 2.
    const names = Array.from({ length: 20 }, (_, i) => `extra${i}`);
    const inOne = names.find((n) => shardOf(n, 2) === 1)!;
    const inTwo = names.find((n) => shardOf(n, 2) === 2)!;
    const a = insertUser(db, { username: inOne });
    const b = insertUser(db, { username: inTwo });
    const states = [new BuildState(':memory:'), new BuildState(':memory:')];
    cleanUpAfterTest(() => states.forEach((s) => s.close()));
    // Both shards write into one tree, as two machines sharing a volume would.
    const tree = new MemoryWriter();
    for (const [i, state] of states.entries()) buildInMemory(file, { shard: { index: i + 1, count: 2 }, state, writer: tree });
    expect(tree.files.has(`${inOne}/rss/index.rss`)).toBe(true);
    expect(tree.files.has(`${inTwo}/rss/index.rss`)).toBe(true);

    db.prepare(`UPDATE users SET state = 'suspended' WHERE id IN (?, ?)`).run(a.id, b.id);
    const second = buildInMemory(file, { shard: { index: 2, count: 2 }, state: states[1], writer: tree });
    expect(second.report.removed).toBeGreaterThan(0);
    expect(tree.files.has(`${inTwo}/rss/index.rss`)).toBe(false);
    // Shard 1's user is gone from the database too, but only shard 1 may remove its files.
    expect(tree.files.has(`${inOne}/rss/index.rss`)).toBe(true);
    buildInMemory(file, { shard: { index: 1, count: 2 }, state: states[0], writer: tree });
    expect(tree.files.has(`${inOne}/rss/index.rss`)).toBe(false);
  });
});

describe('vidfeeds build --shard', () => {
  const bin = resolve(import.meta.dirname, '../../bin/vidfeeds.js');
  const run = (args: string[], cwd: string) => spawnSync(process.execPath, [bin, ...args], { cwd, encoding: 'utf8' });

  it('builds three parts into three directories whose union is the full build, each with its own state', () => {
    const { file } = demo(30);
    const dir = useTempDir();
    expect(run(['build', '--db', file, '--out', 'full'], dir).status).toBe(0);
    for (const k of [1, 2, 3]) {
      const result = run(['build', '--db', file, '--out', `part${k}`, '--shard', `${k}/3`], dir);
      expect(result.status, result.stderr).toBe(0);
    }
    const full = readTree(join(dir, 'full'));
    const union = new Map<string, Buffer>();
    for (const k of [1, 2, 3]) {
      for (const [path, body] of readTree(join(dir, `part${k}`))) {
        expect(union.has(path), path).toBe(false);
        union.set(path, body);
      }
    }
    expect([...union.keys()].sort()).toEqual([...full.keys()].sort());
    // Built at other moments than the full build: the sitemap's lastmod dates are left out.
    for (const [path, body] of full) expect(undated(path, union.get(path)!).equals(undated(path, body)), path).toBe(true);
    expect(readdirSync(join(dir, '.vidfeeds')).sort()).toEqual([
      'full.state.sqlite',
      'part1.shard-1-of-3.state.sqlite',
      'part2.shard-2-of-3.state.sqlite',
      'part3.shard-3-of-3.state.sqlite',
    ]);
  });

  it('refuses a bad K/N, and a state made by another part, before touching a file (exit 2)', () => {
    const { file } = demo(10);
    const dir = useTempDir();
    const bad = run(['build', '--db', file, '--out', 'out', '--shard', '4/3'], dir);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--shard: the shard must be from 1 to 3, not 4');
    expect(readdirSync(dir)).toEqual([]);

    expect(run(['build', '--db', file, '--out', 'out', '--shard', '1/3', '--state', 'one.sqlite'], dir).status).toBe(0);
    const other = run(['build', '--db', file, '--out', 'out', '--shard', '2/3', '--state', 'one.sqlite'], dir);
    expect(other.status).toBe(2);
    expect(other.stderr).toContain('belongs to shard 1/3, this build is shard 2/3');
  });
});

describe('incremental sharded builds', () => {
  it('keep the union equal to a full build when a user appears in another shard than the site files', async () => {
    const { cli } = await import('../helpers/cli.js');
    const dir = useTempDir();
    const db = join(dir, 'site.sqlite');
    expect(cli(['demo', '--db', db, '--users', '20']).code).toBe(0);
    // Both shards build into one tree (a shared volume), each with its own default state.
    const shared = join(dir, 'shared');
    for (const k of [1, 2]) expect(cli(['build', '--db', db, '--out', shared, '--shard', `${k}/2`]).code).toBe(0);

    const name = Array.from({ length: 50 }, (_, i) => `newcomer${i}`).find((n) => shardOf(n, 2) === 2)!;
    const conn = new (await import('better-sqlite3')).default(db);
    conn.prepare(`INSERT INTO users (id, username, display_name, state, created_at, updated_at) VALUES (9999, ?, 'New', 'active', 1704067200, 1704067200)`).run(name);
    conn.close();
    for (const k of [1, 2]) {
      const result = cli(['build', '--db', db, '--out', shared, '--shard', `${k}/2`]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toContain('incremental build');
    }
    expect(cli(['build', '--db', db, '--out', join(dir, 'full')]).code).toBe(0);
    const full = readTree(join(dir, 'full'));
    const merged = readTree(shared);
    expect([...merged.keys()].sort()).toEqual([...full.keys()].sort());
    for (const [path, body] of full) expect(undated(path, merged.get(path)!).equals(undated(path, body)), path).toBe(true);
    // Its id (9999) splits the sitemap by id: the newcomer is in one of the parts the index lists.
    const index = merged.get('sitemap.xml')!.toString();
    const parts = [...merged.keys()].filter((path) => /^sitemap-users-\d+-\d+\.xml$/.test(path));
    for (const part of parts) expect(index).toContain(`/${part}</loc>`);
    const listed = FORMATS.filter((f) => f.scope === 'user' && f.inSitemap).length;
    const width = Math.floor(SITEMAP_LIMITS.partUrls / listed);
    const from = Math.floor(9999 / width) * width;
    const part = `sitemap-users-${from}-${from + width - 1}.xml`;
    expect(parts.filter((p) => merged.get(p)!.toString().includes(`/${name}/`))).toEqual([part]);
  });
});
