import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startServer, type RunningServer, type ServerProgram } from './server-process.js';

/**
 * Runs Debian's Apache 2.4 (installed by .ci/run) in the foreground with a private ServerRoot and
 * configuration in a temporary folder, on ports the test picked: a stock Debian set-up (its
 * default modules, its `<Directory />` and `.ht*` rules) plus what docs/hosting.md tells an operator
 * to add, read from that page so the test and the documentation cannot drift apart.
 */

export const APACHE = '/usr/sbin/apache2';
const MODULES = '/usr/lib/apache2/modules';

/** Why the Apache tests cannot run here, or null when they can. */
export function apacheMissing(): string | null {
  if (!existsSync(APACHE)) return `${APACHE} is not installed (Debian's apache2; .ci/run installs it)`;
  if (!existsSync(join(MODULES, 'mod_rewrite.so'))) return `${MODULES}/mod_rewrite.so is missing (Debian's apache2; .ci/run installs it)`;
  return null;
}

/** The modules Debian's apache2 package enables on installation (/etc/apache2/mods-enabled). */
const DEBIAN_DEFAULT_MODULES = [
  'mpm_event', 'access_compat', 'alias', 'auth_basic', 'authn_core', 'authn_file', 'authz_core', 'authz_host',
  'authz_user', 'autoindex', 'deflate', 'dir', 'env', 'filter', 'mime', 'negotiation', 'reqtimeout', 'setenvif', 'status',
];

export interface DocumentedApache {
  /** The `AllowOverride` line of the `<Directory>` block, as written. */
  allowOverride: string;
  /** Modules the `a2enmod` line names, its comment included (`proxy_http` brings `proxy`, as a2enmod does). */
  modules: string[];
}

/** What docs/hosting.md tells an operator to set up for the `.htaccess`. */
export function documentedApache(): DocumentedApache {
  const page = readFileSync(resolve(import.meta.dirname, '../../docs/hosting.md'), 'utf8');
  const section = /^## Apache 2\.4$([\s\S]*?)^## /m.exec(page)?.[1];
  if (section === undefined) throw new Error('docs/hosting.md has no "## Apache 2.4" section');
  const allowOverride = /^\s*(AllowOverride .+?)\s*$/m.exec(section)?.[1];
  const a2enmod = /^a2enmod (.*)$/m.exec(section)?.[1];
  if (allowOverride === undefined || a2enmod === undefined) throw new Error('docs/hosting.md, Apache: no AllowOverride line or no a2enmod line');
  const modules = new Set(a2enmod.split(/[^a-z_0-9]+/).filter((word) => word !== '' && existsSync(join(MODULES, `mod_${word}.so`))));
  if (modules.size === 0) throw new Error(`docs/hosting.md, Apache: the a2enmod line names no module of ${MODULES}`);
  // mod_proxy must be loaded before the proxy_* modules that use it.
  const needsProxy = [...modules].some((name) => name.startsWith('proxy_'));
  return { allowOverride, modules: needsProxy ? ['proxy', ...[...modules].filter((name) => name !== 'proxy')] : [...modules] };
}

export interface ApacheSite {
  port: number;
  /** DocumentRoot of the virtual host. */
  documentRoot: string;
  /** `Alias` URL path (decoded, as Apache compares it) → directory. */
  aliases?: Record<string, string>;
}

/**
 * A whole configuration: Debian's defaults and the documented additions, one virtual host per
 * site, and the documented `<Directory>` block for each tree (a folder holding a vidfeeds
 * `.htaccess`). The trees start from the most an operator may have switched on
 * (`Options Indexes FollowSymLinks MultiViews`), which the `.htaccess` must take back.
 */
export function apacheConfig(prefix: string, sites: readonly ApacheSite[], trees: readonly string[], documented: DocumentedApache): string {
  const q = (value: string) => {
    if (/["\\\n]/.test(value)) throw new Error(`cannot quote ${JSON.stringify(value)} for Apache`);
    return `"${value}"`;
  };
  const modules = [...new Set([...DEBIAN_DEFAULT_MODULES, ...documented.modules])];
  const lines = [
    `ServerRoot ${q(prefix)}`,
    `PidFile ${q(join(prefix, 'apache.pid'))}`,
    `DefaultRuntimeDir ${q(prefix)}`,
    `ErrorLog ${q(join(prefix, 'error.log'))}`,
    'LogLevel warn',
    'ServerName 127.0.0.1',
    // Apache refuses to serve as root; Debian's www-data may not exist, nobody (65534) does.
    ...(process.getuid?.() === 0 ? ['User #65534', 'Group #65534'] : []),
    ...modules.map((name) => `LoadModule ${name}_module ${q(join(MODULES, `mod_${name}.so`))}`),
    // From Debian's apache2.conf and mods-available/*.conf, what bears on a static tree.
    'StartServers 2',
    'MinSpareThreads 25',
    'MaxSpareThreads 75',
    'ThreadLimit 64',
    'ThreadsPerChild 25',
    'MaxRequestWorkers 150',
    'TypesConfig /etc/mime.types',
    'DirectoryIndex index.html index.cgi index.pl index.php index.xhtml index.htm',
    'AddOutputFilterByType DEFLATE text/html text/plain text/xml text/css text/javascript application/javascript application/rss+xml application/xml',
    'AccessFileName .htaccess',
    '<Directory />',
    '  Options FollowSymLinks',
    '  AllowOverride None',
    '  Require all denied',
    '</Directory>',
    '<FilesMatch "^\\.ht">',
    '  Require all denied',
    '</FilesMatch>',
  ];
  for (const site of sites) {
    lines.push(`Listen 127.0.0.1:${site.port}`, `<VirtualHost 127.0.0.1:${site.port}>`, `  DocumentRoot ${q(site.documentRoot)}`);
    for (const [url, dir] of Object.entries(site.aliases ?? {})) lines.push(`  Alias ${q(url)} ${q(dir)}`);
    lines.push('</VirtualHost>', `<Directory ${q(site.documentRoot)}>`, '  Require all granted', '</Directory>');
  }
  for (const tree of trees) {
    lines.push(`<Directory ${q(tree)}>`, '  Options Indexes FollowSymLinks MultiViews', `  ${documented.allowOverride}`, '  Require all granted', '</Directory>');
  }
  return `${lines.join('\n')}\n`;
}

export type RunningApache = RunningServer;

/**
 * Starts Apache in the foreground. As root its workers run as nobody, so the folders given in
 * `readable` (temporary folders are private) are opened to others first.
 */
export function startApache(prefix: string, config: string, ports: number[], readable: string[], lifetimeMs?: number): Promise<RunningApache> {
  if (process.getuid?.() === 0) for (const dir of [prefix, ...readable]) chmodSync(dir, 0o755);
  return startServer(APACHE_PROGRAM, prefix, config, ports, lifetimeMs);
}

/** Apache in the foreground with its own ServerRoot (the prefix). */
const APACHE_PROGRAM: ServerProgram = {
  name: 'apache2',
  binary: APACHE,
  configName: 'apache2.conf',
  pidName: 'apache.pid',
  args: (prefix, file) => ['-d', prefix, '-f', file, '-DFOREGROUND'],
};
