import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type RunningServer, type ServerProgram } from './server-process.js';

/**
 * Runs Debian's nginx (installed by .ci/run) in the foreground with a configuration of ours, in a
 * temporary prefix: works as root (CI) and as any other user, stops itself after `lifetimeMs`, and
 * is stopped when the test process exits.
 */

export const NGINX = '/usr/sbin/nginx';

export type RunningNginx = RunningServer;

/** The http-level wrapper every test configuration gets; `servers` is what `vidfeeds hosting nginx` printed. */
export function nginxMainConfig(prefix: string, servers: string): string {
  const temp = (name: string) => join(prefix, 'temp', name);
  for (const name of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(temp(name), { recursive: true });
  return [
    // As root, workers would otherwise run as nobody, who cannot read a private temporary folder.
    process.getuid?.() === 0 ? 'user root;' : '',
    'worker_processes 1;',
    'events { worker_connections 256; }',
    'http {',
    '    access_log off;',
    `    client_body_temp_path ${temp('body')};`,
    `    proxy_temp_path ${temp('proxy')};`,
    `    fastcgi_temp_path ${temp('fastcgi')};`,
    `    uwsgi_temp_path ${temp('uwsgi')};`,
    `    scgi_temp_path ${temp('scgi')};`,
    servers,
    '}',
    '',
  ].join('\n');
}

/** `nginx -t` on a configuration: its verdict and messages. */
export function nginxTest(prefix: string, config: string): { ok: boolean; output: string } {
  const file = join(prefix, 'test.conf');
  writeFileSync(file, config);
  const result = spawnSync(NGINX, ['-t', '-p', prefix, '-c', file, '-g', `pid ${join(prefix, 'test.pid')}; error_log stderr;`], { encoding: 'utf8' });
  if (result.error) throw new Error(`nginx could not run (is it installed? .ci/run installs it): ${result.error.message}`);
  return { ok: result.status === 0, output: `${result.stdout}${result.stderr}` };
}

/** nginx in the foreground, its pid file and error log in the prefix. */
const NGINX_PROGRAM: ServerProgram = {
  name: 'nginx',
  binary: NGINX,
  configName: 'nginx.conf',
  pidName: 'nginx.pid',
  args: (prefix, file, errorLog) => ['-p', prefix, '-c', file, '-g', `daemon off; master_process on; pid ${join(prefix, 'nginx.pid')}; error_log ${errorLog} warn;`],
};

export function startNginx(prefix: string, config: string, ports: number[], lifetimeMs?: number): Promise<RunningNginx> {
  return startServer(NGINX_PROGRAM, prefix, config, ports, lifetimeMs);
}
