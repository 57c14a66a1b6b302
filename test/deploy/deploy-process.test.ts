import { fork, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, readTree } from '../helpers/cli.js';
import { useDeployFixture } from '../helpers/deploy-fixture.js';
import { BUCKET, CREDENTIALS } from '../helpers/s3.js';
import { until } from '../helpers/until.js';

/**
 * The deploy process of `vidfeeds watch --deploy` (src/cli/deploy-worker.ts, as built), driven as
 * the watch drives it: a deploy for each `deploy` message, answered with its exit code, a word
 * when the build lock is released (before the uploads of an incremental deploy), and a deploy
 * under way finished when the watch goes away. The store is s3rver, read back through the SDK.
 */

const WORKER = resolve(import.meta.dirname, '../../dist/cli/deploy-worker.js');

const fx = useDeployFixture('vidfeeds-deploy-process-', { users: 3, seed: 29 }, { baseUrl: 'https://videos.example.org' });

interface Worker {
  child: ChildProcess;
  messages: Array<{ code?: number; treeReleased?: boolean }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

function startWorker(): Worker {
  const args = ['--out', fx.out, '--to', `s3://${BUCKET}/w`, '--endpoint', fx.s3.endpoint, '--config', fx.config, '--no-notify'];
  const child = fork(WORKER, args, { env: { ...process.env, ...CREDENTIALS }, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const messages: Worker['messages'] = [];
  child.on('message', (message: Worker['messages'][number]) => messages.push(message));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.on('exit', (code, signal) => done({ code, signal })));
  return { child, messages, exited, stderr: () => stderr };
}

const codes = (worker: Worker) => worker.messages.flatMap((m) => (m.code === undefined ? [] : [m.code]));

/**
 * Whether `count` deploys have answered and printed their summaries: the exit code comes by IPC,
 * the summary through the stderr pipe, and either may reach the test first.
 */
const answered = (worker: Worker, count: number) => codes(worker).length === count && (worker.stderr().match(/^vidfeeds: deploy to /gm)?.length ?? 0) >= count;

function retitle(title: string): void {
  fx.site.db.prepare(`UPDATE videos SET title = ? WHERE id = (SELECT min(id) FROM videos WHERE visibility = 'public')`).run(title);
  const built = cli(['build', '--db', fx.site.file, '--out', fx.out, '--config', fx.config]);
  expect(built.code, built.stderr).toBe(0);
}

/** The bytes the store holds under `w/` for the retitled video's oEmbed JSON document, and the tree's. */
async function oembedInStoreAndTree(): Promise<{ stored: string; tree: string }> {
  const id = fx.site.db.prepare(`SELECT public_id FROM videos WHERE id = (SELECT min(id) FROM videos WHERE visibility = 'public')`).pluck().get() as string;
  const manifest = JSON.parse(cli(['hosting', 'manifest', '--root', fx.out, '--config', fx.config]).stdout) as { files: Array<{ file: string; keys: string[] }> };
  const entry = manifest.files.find((f) => f.file === `${id}/oembed/index.json`)!;
  return { stored: (await fx.s3.get(`w/${entry.keys[0]}`)).body.toString('utf8'), tree: readTree(fx.out).get(entry.file)!.toString('utf8') };
}

describe("watch --deploy's deploy process", () => {
  it('runs a deploy for each message in one process, says when the lock is released, and ends on SIGTERM', async () => {
    const worker = startWorker();
    worker.child.send('deploy');
    expect(await until(() => answered(worker, 1), 60_000), worker.stderr()).toBe(true);
    expect(codes(worker)).toEqual([0]);
    expect(worker.stderr()).toMatch(/full compare/);

    retitle('Sent by the same process');
    fx.s3.holdPutsAfter(0);
    worker.child.send('deploy');
    // The incremental deploy holds its bytes and lets builds go before its first write is answered.
    expect(await until(() => fx.s3.heldCount() > 0, 30_000)).toBe(true);
    expect(worker.messages.filter((m) => m.treeReleased === true).length).toBe(2);
    fx.s3.release();
    expect(await until(() => answered(worker, 2), 60_000), worker.stderr()).toBe(true);
    expect(codes(worker)).toEqual([0, 0]);
    expect(worker.stderr()).toMatch(/incremental/);
    const { stored, tree } = await oembedInStoreAndTree();
    expect(stored).toBe(tree);

    worker.child.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 143, signal: null });
  });

  it('finishes the deploy under way when the watch goes away, then ends', async () => {
    retitle('Sent after the watch went away');
    const worker = startWorker();
    fx.s3.holdPutsAfter(0);
    worker.child.send('deploy');
    expect(await until(() => fx.s3.heldCount() > 0, 30_000)).toBe(true);
    worker.child.disconnect();
    fx.s3.release();
    expect(await worker.exited, worker.stderr()).toEqual({ code: 0, signal: null });
    const { stored, tree } = await oembedInStoreAndTree();
    expect(tree).toContain('Sent after the watch went away');
    expect(stored).toBe(tree);
  });
});
