import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, waitForHttp } from './http.js';

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
  /** The port it serves on, 127.0.0.1. */
  port: number;
  stop(): Promise<void>;
  /** What wrangler printed: its parse of `_headers` and `_redirects` (rules it drops are named there). */
  output(): string;
}

/**
 * Serves `root` like Cloudflare Pages on 127.0.0.1, on a free port; `work` holds wrangler's own
 * state. Wrangler takes seconds to start, and a port free when chosen may be another test's server
 * by then: it is ready when it says so for its port, not when something answers there, and a port
 * taken meanwhile is given up for another.
 */
export async function startPagesDev(wrangler: Wrangler, root: string, work: string): Promise<RunningPages> {
  mkdirSync(work, { recursive: true });
  for (let attempt = 1; ; attempt++) {
    const started = await startOn(wrangler, root, await freePort(), work);
    if (started !== 'port taken') return started;
    if (attempt === 3) throw new Error('wrangler pages dev found its port taken three times');
  }
}

async function startOn(wrangler: Wrangler, root: string, port: number, work: string): Promise<RunningPages | 'port taken'> {
  const child = spawn(wrangler.node, [wrangler.script, 'pages', 'dev', root, '--ip', '127.0.0.1', '--port', String(port), '--compatibility-date', '2025-01-01'], {
    cwd: work,
    stdio: ['ignore', 'pipe', 'pipe'],
    // No metrics, and its logs and settings in the test's folder, not the user's home.
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', XDG_CONFIG_HOME: join(work, 'config'), HOME: work, CI: '1', FORCE_COLOR: '0' },
    detached: true,
  });
  let output = '';
  let onOutput = () => {};
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    onOutput();
  };
  child.stdout.on('data', append);
  child.stderr.on('data', append);
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
  const ready = new Promise<void>((resolve) => {
    onOutput = () => {
      if (output.includes(`Ready on http://127.0.0.1:${port}`)) resolve();
    };
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ready,
      exited.then(() => {
        throw new Error(`wrangler pages dev exited: ${output}`);
      }),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`wrangler pages dev not ready after 60 s: ${output}`)), 60_000))),
    ]);
    await waitForHttp(port, '/', 15_000);
  } catch (error) {
    kill();
    await exited;
    if (output.includes('Address already in use')) return 'port taken';
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return {
    port,
    async stop() {
      kill();
      await exited;
    },
    output: () => output,
  };
}
