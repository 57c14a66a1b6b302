import { InvalidArgumentError, type Command } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { VIDFEEDS_VERSION } from '../../config/version.js';
import type { SiteConfig } from '../../config/site-config.js';
import type { RunSettings } from '../../config/run-settings.js';
import { requireOption } from '../check-command-line.js';
import { cacheControlOf } from '../../hosting/cache-control.js';
import { FORMATS } from '../../formats/registry.js';
import type { Format } from '../../formats/format.js';
import { htaccess } from '../../hosting/apache.js';
import { buildManifest } from '../../hosting/manifest.js';
import { websubLinkOfMatch } from '../../hosting/websub-links.js';
import { nginxConfig, postLimitOf } from '../../hosting/nginx.js';
import { headersFile, redirectsFile, type PagesHost } from '../../hosting/pages.js';
import { routesOf } from '../../hosting/routes.js';
import { SitePaths } from '../../paths/site-paths.js';
import { checkPlaces } from '../../paths/url-scheme.js';
import { EXIT, UsageError } from '../errors.js';
import type { Console } from '../output.js';
import { configOptions, exitCodesHelp, positiveInteger, readSettings, type ConfigFlags } from './shared-options.js';

/**
 * `vidfeeds hosting nginx|apache|headers|redirects|manifest`: host configurations printed to
 * stdout, all from the format table (src/hosting/). docs/hosting.md shows where each one goes.
 */

const GENERATOR = `vidfeeds ${VIDFEEDS_VERSION}`;

interface NginxFlags extends ConfigFlags {
  root?: string;
  listen: string;
  serverName?: string;
  upstream?: string;
  automatedRate?: string;
  automatedBurst?: number;
  videoLocation?: string;
  videoRoot?: string;
  refuseHotlinks?: boolean;
  allowReferer: string[];
  name: string;
  brotliStatic?: boolean;
}

/** The configuration, and the site's paths from it. */
function siteOf(flags: ConfigFlags, io: Console): { config: SiteConfig; run: RunSettings; paths: SitePaths } {
  const { site: config, run } = readSettings(flags, io);
  checkPlaces(FORMATS);
  return { config, run, paths: new SitePaths(config.baseUrl, config.pages, FORMATS) };
}

/** The built tree: --root, else the configuration's `out`. */
function rootOf(flag: string | undefined, run: RunSettings): string {
  const root = flag ?? run.out;
  if (root === null) throw new UsageError('--root is required (or set out in the configuration)');
  return root;
}

const EXIT_CODES = { 0: 'printed', 2: 'bad flags or configuration: nothing printed' };

function decodedBasePath(paths: SitePaths): string {
  return decodeURIComponent(paths.basePath);
}

export function parseListen(value: string): string {
  if (/^\d{1,5}$/.test(value) && Number(value) >= 1 && Number(value) <= 65535) return value;
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  if (match && Number(match[2]) >= 1 && Number(match[2]) <= 65535) return value;
  throw new InvalidArgumentError('must be PORT, ADDRESS:PORT or [IPv6]:PORT');
}

export function parseHostPort(value: string): string {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) throw new InvalidArgumentError('must be HOST:PORT, e.g. 127.0.0.1:8081');
  return value;
}

/** An address to listen on: an IPv4 or IPv6 address, or a host name. */
export function parseListenHost(value: string): string {
  if (!/^[A-Za-z0-9.:-]{1,253}$/.test(value)) throw new InvalidArgumentError('must be an IP address or a host name');
  return value;
}

function parseRate(value: string): string {
  if (!/^[1-9]\d{0,6}r\/[sm]$/.test(value)) throw new InvalidArgumentError('must be a rate such as 30r/m or 2r/s');
  return value;
}

function parseName(value: string): string {
  if (!/^[A-Za-z][A-Za-z0-9_]{0,31}$/.test(value)) throw new InvalidArgumentError('must be a letter followed by letters, digits or _ (at most 32)');
  return value;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function existingDir(root: string, flag: string, io: Console): string {
  const full = resolve(root);
  if (!existsSync(full)) io.log.warn(`warning: ${flag} ${full} does not exist here (fine if the configuration is for another machine)`);
  else if (!statSync(full).isDirectory()) throw new UsageError(`${flag} ${full} is not a directory`);
  return full;
}

/** A generator's own error (a path nginx cannot hold, ...) is the operator's to fix: exit 2. */
function asUsage<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    if (error instanceof Error && !(error instanceof UsageError) && error.constructor === Error) throw new UsageError(error.message);
    throw error;
  }
}

/** `vidfeeds hosting nginx`: an nginx server block for the tree. */
function registerNginx(hosting: Command, io: Console, setExit: (code: number) => void): void {
  const nginx = hosting.command('nginx').description('print an nginx server block that serves every URL of the tree with its content type');
  requireOption(nginx, '--root <dir>', 'the built tree (the --out of `vidfeeds build`)', 'out');
  exitCodesHelp(configOptions(
    nginx
      .option('--listen <port>', 'PORT, ADDRESS:PORT or [IPv6]:PORT to listen on', parseListen, '80')
      .option('--server-name <names>', 'server_name (default: the host of the base URL)')
      .option('--upstream <host:port>', '`vidfeeds serve` for parametrised requests and the recommendation POST', parseHostPort)
      .option('--automated-rate <rate>', 'rate-limit automated clients (by User-Agent) per address, e.g. 30r/m (default: off)', parseRate)
      .option('--automated-burst <n>', 'requests above the rate before 429', positiveInteger('--automated-burst', 10_000), 20)
      .option('--video-location <prefix>', 'also serve video files under this URL path prefix, e.g. /files/')
      .option('--video-root <dir>', 'directory holding the video files of --video-location')
      .option('--refuse-hotlinks', 'refuse video files to pages of other sites (Referer check; default: off)')
      .option('--allow-referer <host>', 'another host whose pages may link to the video files (repeatable)', collect, [])
      .option('--name <name>', 'prefix of the names added to nginx (zones, maps, locations)', parseName, 'vidfeeds')
      .option('--brotli-static', 'send the build\'s .br files (needs ngx_brotli\'s static module; see docs/hosting.md)'),
    { siteName: false },
  ), EXIT_CODES).action((flags: NginxFlags) => {
    const { config, run, paths } = siteOf(flags, io);
    if (flags.brotliStatic && !config.compress.includes('br')) {
      throw new UsageError('--brotli-static sends the build\'s .br files, but the configuration\'s compress does not write them: add "br" to compress');
    }
    checkNginxFlags(flags);
    const root = existingDir(rootOf(flags.root, run), '--root', io);
    const text = asUsage(() =>
      nginxConfig(routesOf(FORMATS), {
        root,
        listen: flags.listen,
        serverName: flags.serverName ?? new URL(paths.base).hostname,
        basePath: decodedBasePath(paths),
        upstream: flags.upstream,
        postLimit: postLimitOf(config.recommendationSubmit.perClient),
        botRate: flags.automatedRate,
        botBurst: flags.automatedBurst,
        videoLocation: flags.videoLocation,
        videoRoot: flags.videoRoot === undefined ? undefined : resolve(flags.videoRoot),
        refuseHotlinks: flags.refuseHotlinks,
        allowReferers: flags.allowReferer,
        name: flags.name,
        generator: GENERATOR,
        cacheControl: (format) => cacheControlOf(config.cacheControl, format),
        gzipStatic: config.compress.includes('gzip'),
        brotliStatic: flags.brotliStatic ?? false,
        websub: { hubs: config.websub.hubs, origin: new URL(paths.base).origin },
      }),
    );
    io.out(text);
    setExit(EXIT.ok);
  });
}

/** The nginx flags that must go together, or have a shape commander cannot check alone. */
function checkNginxFlags(flags: NginxFlags): void {
  if ((flags.videoLocation === undefined) !== (flags.videoRoot === undefined)) {
    throw new UsageError('--video-location and --video-root go together');
  }
  if (flags.refuseHotlinks && flags.videoLocation === undefined) throw new UsageError('--refuse-hotlinks needs --video-location and --video-root');
  if (flags.videoLocation !== undefined && !/^\/[^\s"'{};$\\]*\/$/.test(flags.videoLocation)) {
    throw new UsageError('--video-location must be a URL path that starts and ends with /, e.g. /files/');
  }
}

export function registerHosting(program: Command, io: Console, setExit: (code: number) => void): void {
  const hosting = program
    .command('hosting')
    .description('print a host configuration for the built tree (nginx, Apache, Netlify/Cloudflare Pages, object stores)');

  registerNginx(hosting, io, setExit);

  exitCodesHelp(configOptions(
    hosting
      .command('apache')
      .description('print an .htaccess for the root of the tree (Apache 2.4, mod_rewrite)')
      .option('--upstream <host:port>', '`vidfeeds serve` for parametrised requests and the POST (mod_proxy_http)', parseHostPort),
    { siteName: false },
  ), EXIT_CODES).action((flags: ConfigFlags & { upstream?: string }) => {
    const { config, paths } = siteOf(flags, io);
    io.out(
      asUsage(() =>
        htaccess(routesOf(FORMATS), {
          basePath: decodedBasePath(paths),
          upstream: flags.upstream,
          generator: GENERATOR,
          cacheControl: (format) => cacheControlOf(config.cacheControl, format),
          compress: config.compress,
        }),
      ),
    );
    setExit(EXIT.ok);
  });

  const headers = hosting
    .command('headers')
    .description('print a _headers file for Netlify and Cloudflare Pages')
    .option('--for <host>', "netlify or cloudflare (default: a file both read; only cloudflare's carries the feeds' WebSub Link)", pagesHost);
  exitCodesHelp(configOptions(headers, { siteName: false }), EXIT_CODES).action((flags: ConfigFlags & { for?: PagesHost }) => {
    const { config, paths } = siteOf(flags, io);
    const cacheControl = (format: Format) => cacheControlOf(config.cacheControl, format);
    io.out(headersFile(routesOf(FORMATS), paths.basePath, GENERATOR, cacheControl, { host: flags.for, websub: { hubs: config.websub.hubs, base: paths.base } }));
    setExit(EXIT.ok);
  });

  const redirects = hosting.command('redirects').description('print a _redirects file (rewrites, status 200) for Netlify or Cloudflare Pages');
  requireOption(redirects, '--for <host>', 'netlify or cloudflare');
  redirects.options.at(-1)!.argParser(pagesHost);
  exitCodesHelp(configOptions(redirects, { siteName: false }), EXIT_CODES).action((flags: ConfigFlags & { for: PagesHost }) => {
    const { paths } = siteOf(flags, io);
    io.out(redirectsFile(routesOf(FORMATS), paths.basePath, flags.for, GENERATOR));
    setExit(EXIT.ok);
  });

  const manifest = hosting.command('manifest').description('print a JSON manifest of the built tree: each file, its headers, size, SHA-256, keys and compressed forms');
  requireOption(manifest, '--root <dir>', 'the built tree (the --out of `vidfeeds build`)', 'out');
  exitCodesHelp(configOptions(manifest, { siteName: false }), EXIT_CODES).action((flags: ConfigFlags & { root?: string }) => {
    const { config, run, paths } = siteOf(flags, io);
    const root = resolve(rootOf(flags.root, run));
    if (!existsSync(root) || !statSync(root).isDirectory()) throw new UsageError(`--root ${root} is not a directory: build the tree first`);
    const { manifest: built, ignored } = buildManifest(
      routesOf(FORMATS),
      root,
      decodedBasePath(paths),
      GENERATOR,
      (format) => cacheControlOf(config.cacheControl, format),
      (match) => websubLinkOfMatch(config.websub.hubs, paths, match),
    );
    io.out(JSON.stringify(built, null, 2));
    if (ignored.length > 0) {
      io.log.warn(`${ignored.length} files under ${root} are not documents of the format table and are left out (e.g. ${ignored.slice(0, 3).join(', ')})`);
    }
    io.log.info(`${built.files.length} files in the manifest`);
    setExit(EXIT.ok);
  });
}

function pagesHost(value: string): PagesHost {
  if (value !== 'netlify' && value !== 'cloudflare') throw new InvalidArgumentError('must be netlify or cloudflare');
  return value;
}
