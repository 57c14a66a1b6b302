import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitForHttp } from './http.js';

/**
 * A web server of the machine's (nginx, Apache) run in the foreground for a test: its
 * configuration text written into a temporary prefix, started, waited for until every port answers
 * HTTP, and stopped. It stops itself after `lifetimeMs` and when the test process exits, so no
 * server outlives its test. nginx.ts and apache.ts describe the two servers over it.
 */

/** How to run one server. */
export interface ServerProgram {
  /** Its name in messages (`nginx`, `apache2`). */
  name: string;
  /** The binary's path. */
  binary: string;
  /** The configuration file's name inside the prefix. */
  configName: string;
  /**
   * The pid file's name inside the prefix: the server writes it once its ports are bound, so a
   * port some other process took shows as this server's failure, not as that process's answers.
   */
  pidName: string;
  /** Its arguments, to run in the foreground with this configuration and error log. */
  args(prefix: string, configFile: string, errorLog: string): string[];
}

export interface RunningServer {
  stop(): Promise<void>;
  /** The server's error log so far ('' when there is none yet). */
  errorLog(): string;
}

/** Resolves once `file` exists (polled; the caller bounds the wait). */
async function waitForFile(file: string): Promise<void> {
  while (!existsSync(file)) await new Promise((r) => setTimeout(r, 50));
}

/**
 * Starts `program` in `prefix` with `config`; resolves once its pid file is written and every port
 * answers, rejects with its output when it exits first.
 */
export async function startServer(program: ServerProgram, prefix: string, config: string, ports: readonly number[], lifetimeMs = 300_000): Promise<RunningServer> {
  const file = join(prefix, program.configName);
  const errorLog = join(prefix, 'error.log');
  writeFileSync(file, config);
  const child = spawn(program.binary, program.args(prefix, file, errorLog), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = () => child.exitCode === null && child.signalCode === null && child.kill('SIGTERM');
  const watchdog = setTimeout(kill, lifetimeMs);
  watchdog.unref();
  process.once('exit', kill);
  const readLog = () => {
    try {
      return readFileSync(errorLog, 'utf8');
    } catch {
      return '';
    }
  };
  try {
    await Promise.race([
      Promise.all([...ports.map((port) => waitForHttp(port)), waitForFile(join(prefix, program.pidName))]),
      exited.then(() => {
        throw new Error(`${program.name} exited: ${stderr}${readLog()}`);
      }),
    ]);
  } catch (error) {
    kill();
    throw error;
  }
  return {
    async stop() {
      clearTimeout(watchdog);
      kill();
      await exited;
    },
    errorLog: readLog,
  };
}
