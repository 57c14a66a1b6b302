import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { cli, readTree } from '../helpers/cli.js';
import { manifest } from '../helpers/deploy-objects.js';
import { BUCKET, runCli } from '../helpers/s3.js';
import { useDeployFixture } from '../helpers/deploy-fixture.js';

/**
 * A changed `compress` is settled by a full build only: the builds before it (partial, stopped by
 * the removal guard or a signal, failing) write and remove forms of the new encodings beside the
 * documents they touch. A deploy meanwhile cannot take the state's recorded encodings for those
 * on disk: it compares everything, so no compressed form keeps bytes its document no longer has.
 */

const fx = useDeployFixture('vidfeeds-compression-change-', { users: 2, seed: 5 }, configOf(['gzip']));

function configOf(compress: string[]): Record<string, unknown> {
  return { baseUrl: 'https://videos.example.org', compress };
}

function build(extra: string[] = []): void {
  const result = cli(['build', '--db', fx.site.file, '--out', fx.out, '--config', fx.config, ...extra]);
  expect(result.code, result.stderr).toBe(0);
}

async function deploy() {
  const result = await runCli(['deploy', '--out', fx.out, '--to', `s3://${BUCKET}/site`, '--endpoint', fx.s3.endpoint, '--config', fx.config, '--json'], { cwd: fx.dir });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as { mode: string; reason: string | null; counts: { uploaded: number; deleted: number } };
}

/** The store holds exactly the tree's objects (each form under its own suffix), each with its file's bytes and encoding. */
async function expectStoreEqualsTree(): Promise<void> {
  const expected = new Map<string, { file: string; encoding?: string }>();
  for (const f of manifest(fx.out, fx.config)) {
    for (const key of f.keys) {
      expected.set(`site/${key}`, { file: f.file });
      for (const form of f.compressed) expected.set(`site/${key}.${form.contentEncoding === 'gzip' ? 'gz' : 'br'}`, { file: form.file, encoding: form.contentEncoding });
    }
  }
  const tree = readTree(fx.out);
  expect(new Set(await fx.s3.keys())).toEqual(new Set(expected.keys()));
  for (const [key, { file, encoding }] of expected) {
    const object = await fx.s3.get(key);
    expect(object.body.equals(tree.get(file)!), key).toBe(true);
    expect(object.contentEncoding, key).toBe(encoding);
  }
}

function editTitle(title: string): void {
  fx.site.db.prepare(`UPDATE videos SET title = ? WHERE id = (SELECT min(id) FROM videos WHERE visibility = 'public')`).run(title);
}

describe('a deploy after compress changed, before a full build settled it', () => {
  it('the first deploy publishes the forms beside the documents', async () => {
    expect((await deploy()).mode).toBe('full');
    await expectStoreEqualsTree();
  });

  it('with compression off, leaves no compressed form holding a document’s old bytes', async () => {
    // Compression off: a partial build rewrites the edited video's oEmbed documents without their .gz (and removes the others' .gz).
    writeFileSync(fx.config, JSON.stringify(configOf([])));
    editTitle('Edited with compression off');
    build(['--only', 'oembed']);
    const off = await deploy();
    await expectStoreEqualsTree();
    expect(off).toMatchObject({ mode: 'full', reason: expect.stringContaining('compressed forms beside the documents are not known') });
  });

  it('with compression on again before a full build, publishes the tree as it is', async () => {
    // And on again, before any full build: the forms the builds meet are brought back, the others are not yet.
    writeFileSync(fx.config, JSON.stringify(configOf(['gzip'])));
    editTitle('Edited with compression on again');
    build(['--only', 'oembed']);
    expect((await deploy()).mode).toBe('full');
    await expectStoreEqualsTree();
  });

  it('once a full build settles the forms, compares once more, then deploys incrementally again', async () => {
    // A full build settles the forms: the deploy after it compares once more, then the next is incremental again.
    build(['--full']);
    expect((await deploy()).mode).toBe('full');
    await expectStoreEqualsTree();
    editTitle('Edited once settled');
    build();
    const settled = await deploy();
    expect(settled.mode).toBe('incremental');
    expect(settled.counts.uploaded).toBeGreaterThan(0);
    await expectStoreEqualsTree();
  });
});
