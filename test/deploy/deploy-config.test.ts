import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { BUCKET, runCli } from '../helpers/s3.js';
import { useDeployFixture } from '../helpers/deploy-fixture.js';

/**
 * `vidfeeds deploy` reads where it publishes, and the tree and build state it publishes from, from
 * the configuration (`deploy.to`, `deploy.endpoint`, `out`, `state`), each flag winning over its
 * setting; with no target from either it stops before touching the store. Every run starts in a
 * folder of its own, so nothing is found from the working directory.
 */

const BASE = 'https://videos.example.org';

const fx = useDeployFixture('vidfeeds-deploy-config-', { users: 2, seed: 23 }, { baseUrl: BASE });

/** A configuration file in a folder of its own (its relative paths are relative to it), and that folder. */
function configIn(name: string, settings: Record<string, unknown>): { file: string; dir: string } {
  const dir = join(fx.dir, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'vidfeeds.config.json');
  writeFileSync(file, JSON.stringify({ baseUrl: BASE, ...settings }));
  return { file, dir };
}

async function deployWith(config: { file: string }, flags: string[] = []) {
  const elsewhere = join(fx.dir, 'elsewhere');
  mkdirSync(elsewhere, { recursive: true });
  const result = await runCli(['deploy', '--config', config.file, '--no-notify', '--json', ...flags], { cwd: elsewhere });
  return { ...result, report: result.stdout === '' ? null : JSON.parse(result.stdout) };
}

const keysUnder = async (prefix: string) => (await fx.s3.keys()).filter((key) => key.startsWith(`${prefix}/`));

describe('vidfeeds deploy and the configuration', () => {
  it('publishes where deploy.to and deploy.endpoint say, the tree that out and state name', async () => {
    const config = configIn('configured', { db: fx.site.file, out: 'out', state: 'state/site.state.sqlite', deploy: { to: `s3://${BUCKET}/from-config`, endpoint: fx.s3.endpoint } });
    const built = cli(['build', '--config', config.file], { cwd: fx.dir });
    expect(built.code, built.stderr).toBe(0);
    expect(existsSync(join(config.dir, 'state', 'site.state.sqlite'))).toBe(true);

    const first = await deployWith(config);
    expect(first.code, first.stderr).toBe(0);
    expect(first.report.target).toBe(`s3://${BUCKET}/from-config/`);
    expect(await keysUnder('from-config')).toContain('from-config/robots.txt');
    expect(first.report.counts.uploaded).toBe(first.report.counts.objects);
    // The report, written in pieces, is one line of JSON listing every key.
    expect(first.stdout.trim().split('\n')).toHaveLength(1);
    expect([...first.report.uploaded].sort()).toEqual((await keysUnder('from-config')).sort());

    // The build state the configuration names says nothing changed: no listing, no write.
    const again = await deployWith(config);
    expect(again.code, again.stderr).toBe(0);
    expect(again.report.mode, again.report.reason).toBe('incremental');
    expect(again.report.counts).toMatchObject({ uploaded: 0, deleted: 0 });
  });

  it('lets --to and --endpoint win over deploy.to and deploy.endpoint', async () => {
    // An endpoint nothing answers on: only the flag's can have been used.
    const config = configIn('overridden', { deploy: { to: `s3://${BUCKET}/not-this`, endpoint: 'http://127.0.0.1:9' } });
    const result = await deployWith(config, ['--out', fx.out, '--to', `s3://${BUCKET}/from-flag`, '--endpoint', fx.s3.endpoint]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.report.target).toBe(`s3://${BUCKET}/from-flag/`);
    expect(await keysUnder('from-flag')).toContain('from-flag/robots.txt');
    expect(await keysUnder('not-this')).toEqual([]);
  });

  it('names --to and deploy.to when neither gives a target, and touches nothing', async () => {
    const before = await fx.s3.keys();
    const record = join(fx.dir, '.vidfeeds', 'out.deploy.json');
    const recorded = existsSync(record) ? readFileSync(record, 'utf8') : null;
    const config = configIn('no-target', {});
    const result = await deployWith(config, ['--out', fx.out, '--endpoint', fx.s3.endpoint]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--to is required (or set deploy.to in the configuration)');
    expect(await fx.s3.keys()).toEqual(before);
    expect(existsSync(record) ? readFileSync(record, 'utf8') : null).toBe(recorded);
  });

  it('blames deploy.to for a bad target in the configuration', async () => {
    // The configuration's checks refuse it first, naming the file and the setting.
    const config = configIn('bad-target', { deploy: { to: 'https://bucket/site' } });
    const result = await deployWith(config, ['--out', fx.out]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/deploy\.to/);
    expect(result.stderr).toContain(config.file);
  });
});
