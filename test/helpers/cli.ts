import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { readTree as readTreeFiles } from './tree.js';

/** The built command, run as a user runs it (npm test compiles dist/ first). */
export const BIN = resolve(import.meta.dirname, '../../bin/vidfeeds.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function cli(args: string[], options: { cwd?: string; input?: string } = {}): CliResult {
  const result = spawnSync(process.execPath, [BIN, ...args], { cwd: options.cwd, encoding: 'utf8', input: options.input ?? '', env: { ...process.env, FORCE_COLOR: '0' } });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

export function cliAsync(args: string[], options: { cwd?: string } = {}): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Every served file under `dir` (relative, `/`-separated paths) with its bytes: dot-named entries
 * (the writer's staging folder, the build records) are not documents and are left out.
 */
export function readTree(dir: string): Map<string, Buffer> {
  return new Map([...readTreeFiles(dir)].map(([path, file]) => [path, file.body]));
}
