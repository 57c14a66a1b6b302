import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { readTree } from '../helpers/cli.js';
import { manifest } from '../helpers/deploy-objects.js';
import { BUCKET, killWhenHeld, runCli } from '../helpers/s3.js';
import { useDeployFixture } from '../helpers/deploy-fixture.js';
import type { ChildProcess } from 'node:child_process';

/**
 * A deploy that rewrites objects for another Cache-Control and is killed part-way leaves objects
 * with headers its deploy record does not describe. Once the configuration is set back, the record
 * matches again: the next deploy must still find and rewrite those objects, not trust the record
 * (incremental) or the listing's ETags (a compare under the recorded headers).
 */

const fx = useDeployFixture('vidfeeds-stopped-header-change-', { users: 3, seed: 9 }, configOf('public, max-age=900'));

function configOf(feedCache: string): Record<string, unknown> {
  return { baseUrl: 'https://videos.example.org', compress: ['gzip'], cacheControl: { formats: { rss: feedCache } } };
}

function deploy(extra: string[] = [], onStart?: (child: ChildProcess) => void) {
  return runCli(['deploy', '--out', fx.out, '--to', `s3://${BUCKET}/site`, '--endpoint', fx.s3.endpoint, '--config', fx.config, '--json', ...extra], { cwd: fx.dir, onStart });
}

describe('a deploy under another Cache-Control, killed part-way, then the configuration set back', () => {
  it('the deploy under another Cache-Control is killed after four writes', async () => {
    const first = await deploy();
    expect(first.code, first.stderr).toBe(0);

    writeFileSync(fx.config, JSON.stringify(configOf('public, max-age=60')));
    fx.s3.holdPutsAfter(4);
    const killed = await deploy(['--concurrency', '1'], killWhenHeld(fx.s3));
    fx.s3.discardHeld();
    expect(killed.code).not.toBe(0);
  });

  it('once the configuration is set back, the next deploy leaves no object with the killed deploy’s headers', async () => {
    writeFileSync(fx.config, JSON.stringify(configOf('public, max-age=900')));
    const again = await deploy();
    expect(again.code, again.stderr).toBe(0);

    const tree = readTree(fx.out);
    const keys = new Set(await fx.s3.keys());
    let feeds = 0;
    for (const f of manifest(fx.out, fx.config)) {
      for (const key of f.keys) {
        for (const [object, file] of [[`site/${key}`, f.file], ...f.compressed.map((form) => [`site/${key}.gz`, form.file])] as Array<[string, string]>) {
          expect(keys.has(object), object).toBe(true);
          const stored = await fx.s3.get(object);
          expect(stored.body.equals(tree.get(file)!), object).toBe(true);
          if (!f.file.endsWith('.rss')) continue;
          expect(stored.cacheControl, object).toBe('public, max-age=900');
          feeds++;
        }
      }
    }
    expect(feeds).toBeGreaterThan(4);
    const verify = await deploy(['--verify', '--dry-run']);
    expect(JSON.parse(verify.stdout)).toMatchObject({ counts: { uploaded: 0, deleted: 0 } });
  });
});
