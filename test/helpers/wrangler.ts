import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { waitForHttp } from './http.js';

/**
 * Cloudflare's own Pages server, run locally: `wrangler pages dev DIR` serves a folder with the
 * asset handling of Cloudflare Pages (`_headers`, `_redirects`, index files) in workerd. Wrangler
 * is an npm package of about 230 MB that needs Node 22.12 or later, so it is no dependency of
 * vidfeeds: `.ci/run` installs it beside the clone and names it in VIDFEEDS_TEST_WRANGLER (its
 * `bin/wrangler.js`) and the Node that runs it in VIDFEEDS_TEST_NODE22 (default: this Node).
 */

export interface Wrangler {
  node: string;
  script: string;
}

/** Where wrangler is, or the message of a skipped test saying how to get it. */
export function findWrangler(): Wrangler | string {
  const script = process.env.VIDFEEDS_TEST_WRANGLER;
  const node = process.env.VIDFEEDS_TEST_NODE22 || process.execPath;
  const how = 'npm install --prefix DIR wrangler@4, then VIDFEEDS_TEST_WRANGLER=DIR/node_modules/wrangler/bin/wrangler.js and VIDFEEDS_TEST_NODE22=<node 22.12 or later>; .ci/run does';
  if (script === undefined || script === '' || !existsSync(script)) {
    const message = `skipped Cloudflare Pages: wrangler not installed (${how})`;
    console.warn(message);
    return message;
  }
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  if (major < 22 || (major === 22 && minor < 12)) {
    const message = `skipped Cloudflare Pages: wrangler needs Node 22.12 or later, and ${node} is ${version || 'not a Node'} (${how})`;
    console.warn(message);
    return message;
  }
  return { node, script };
}

export interface RunningPages {
  stop(): Promise<void>;
  /** What wrangler printed: its parse of `_headers` and `_redirects` (rules it drops are named there). */
  output(): string;
}

/** Serves `root` like Cloudflare Pages on 127.0.0.1:`port`; `work` holds wrangler's own state. */
export async function startPagesDev(wrangler: Wrangler, root: string, port: number, work: string): Promise<RunningPages> {
  mkdirSync(work, { recursive: true });
  const child = spawn(wrangler.node, [wrangler.script, 'pages', 'dev', root, '--ip', '127.0.0.1', '--port', String(port), '--compatibility-date', '2025-01-01'], {
    cwd: work,
    stdio: ['ignore', 'pipe', 'pipe'],
    // No metrics, and its logs and settings in the test's folder, not the user's home.
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', XDG_CONFIG_HOME: join(work, 'config'), HOME: work, CI: '1', FORCE_COLOR: '0' },
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // wrangler runs workerd as its child: the whole process group goes.
  const kill = () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
  };
  process.once('exit', kill);
  try {
    await Promise.race([
      waitForHttp(port, '/', 60_000),
      exited.then(() => {
        throw new Error(`wrangler pages dev exited: ${output}`);
      }),
    ]);
  } catch (error) {
    kill();
    throw error;
  }
  return {
    async stop() {
      kill();
      await exited;
    },
    output: () => output,
  };
}
