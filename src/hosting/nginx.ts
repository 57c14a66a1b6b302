import { DEFAULT_CONFIG } from '../config/config-schema.js';
import type { Format, SiteFormat } from '../formats/format.js';
import {
  extraHeaders,
  OEMBED_DYNAMIC_PARAMS,
  RECOMMENDATION_POST_MAX_BYTES,
  RECOMMENDATIONS_PARAM,
  type KeyedFormat,
  type Routes,
} from './routes.js';
import { bareMediaType, isCompressible } from '../paths/compression.js';
import { keyedFile, PAGE_NUMBER, urlPattern } from '../paths/url-scheme.js';
import { isWebSubTopic } from './websub-links.js';

/**
 * The nginx configuration of a tree: a `server` block (and, when rate limiting is on, the two
 * http-level lines it needs) for a file in /etc/nginx/conf.d/. Every location comes from the
 * format table through `Routes`; nothing here names a format, a file or a content type.
 *
 * How it serves (docs/hosting.md):
 * - `location /` answers 404: only the URLs of the table are served;
 * - one regex location per user or video document; the key is one segment not starting with a
 *   dot, and `try_files` names the file, so neither a directory index nor a redirect is involved;
 * - each location empties `types` and sets `default_type` to the format's media type, charset
 *   included; `charset off` keeps nginx from adding a second one;
 * - requests whose raw URI holds an encoded `/`, `\` or NUL, or a `.`/`..` segment, get 404, and
 *   so do requests nginx itself rejects as malformed (400 → 404);
 * - with an upstream (`vidfeeds serve`), only the parametrised oEmbed and recommendation requests
 *   and the recommendation POST are proxied: every file is still sent by nginx;
 * - each location sends its format's Cache-Control (src/hosting/cache-control.ts), and the build's
 *   pre-compressed forms go out through gzip_static (and brotli_static on request) with the
 *   location's type: the same Content-Type whichever file is sent.
 */

export interface NginxOptions {
  /** Absolute path of the tree. */
  root: string;
  /** `PORT`, `ADDRESS:PORT` or `[IPv6]:PORT`. */
  listen: string;
  serverName: string;
  /** Path of the base URL, percent-decoded, without a trailing slash ('' at the root). */
  basePath: string;
  /** `HOST:PORT` of `vidfeeds serve`. */
  upstream?: string;
  /** nginx's own limit on recommendation POSTs per client address, with an upstream (see `postLimitOf`). */
  postLimit?: PostLimit;
  /** Rate limit for automated clients, nginx syntax (`30r/m`, `2r/s`); off when absent. */
  botRate?: string;
  /** Requests an automated client may send above the rate before getting 429. */
  botBurst?: number;
  /** Serve video files under this URL path prefix from `videoRoot`. */
  videoLocation?: string;
  videoRoot?: string;
  /** Refuse requests for video files whose Referer is another site. */
  refuseHotlinks?: boolean;
  /** Other host names whose pages may link to the video files (besides server_name). */
  allowReferers?: readonly string[];
  /** Prefix of the names this configuration adds to nginx's http context (zones, maps). */
  name: string;
  /** The Cache-Control value of each format (src/hosting/cache-control.ts). */
  cacheControl: (format: Format) => string;
  /** Send the build's `.gz` files (gzip_static) to clients that take gzip. */
  gzipStatic?: boolean;
  /** Send its `.br` files (brotli_static: ngx_brotli's static module must be loaded). */
  brotliStatic?: boolean;
  /** One line naming the generator, for the header comment. */
  generator: string;
  /** WebSub: the hubs the feeds name, and the scheme and host of the base URL, for their `Link` headers. */
  websub?: { hubs: readonly string[]; origin: string };
}

/** nginx's limit on recommendation POSTs per client address: `limit_req` in whole requests per minute. */
export interface PostLimit {
  perMinute: number;
  /** Requests at once before the rate applies (nginx's `burst`, with `nodelay`). */
  burst: number;
}

/**
 * nginx's form of the per-client limit of the configuration (`recommendationSubmit.perClient`):
 * the same number of POSTs at once, then the same average rate, rounded up to whole requests a
 * minute (the finest nginx has). It turns a flood away before `vidfeeds serve`, which counts the
 * exact window itself.
 */
export function postLimitOf(perClient: { limit: number; windowSeconds: number }): PostLimit {
  return { perMinute: Math.max(1, Math.ceil((perClient.limit * 60) / perClient.windowSeconds)), burst: perClient.limit - 1 };
}

/** User agents treated as automated clients by the rate limit (seed section 8 names them). */
export const AUTOMATED_USER_AGENTS =
  'bot|crawl|spider|slurp|scrap|archiver|fetch|wget|curl|python|java/|go-http|libwww|httpclient|okhttp|node-fetch|axios|feed|rss';

/** Media types of the video files the hot-link location serves. */
const VIDEO_TYPES: ReadonlyArray<[string, string]> = [
  ['video/x-flv', 'flv'],
  ['video/mp4', 'mp4 m4v'],
  ['video/webm', 'webm'],
  ['video/ogg', 'ogv'],
  ['video/quicktime', 'mov'],
];

/** A value in nginx's double quotes: `\` and `"` escaped; control characters refused. */
export function nginxQuote(value: string, what: string): string {
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new Error(`${what} contains a control character, which nginx cannot read: ${JSON.stringify(value)}`);
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/** A value nginx would read variables in (`root`, `try_files`): a literal `$` cannot be written there. */
function literalPath(value: string, what: string): string {
  if (value.includes('$')) throw new Error(`${what} contains "$", which nginx reads as a variable: ${JSON.stringify(value)}`);
  return nginxQuote(value, what);
}

/** Text matched literally inside a PCRE pattern. */
export function pcreLiteral(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}

/** A JavaScript RegExp of the table (`alsoWrites`) as a PCRE fragment, without its anchors. */
function pcreOf(pattern: RegExp, format: string): string {
  const source = pattern.source;
  if (!source.startsWith('^') || !source.endsWith('$') || pattern.flags.replace('u', '') !== '') {
    throw new Error(`format ${format}: alsoWrites must be an anchored /^...$/ pattern without flags to become an nginx location`);
  }
  return source.slice(1, -1);
}

/** Names of the table (dirs, files) go into paths and patterns: they must be plain. */
function plainName(value: string, what: string): string {
  if (!/^[A-Za-z0-9._-]*$/.test(value)) throw new Error(`${what} ${JSON.stringify(value)} is not a plain file name`);
  return value;
}

/**
 * How a location sends its format's file: the format's Content-Type whatever the file's name, its
 * Cache-Control, and (add_header in a location drops the server's) nosniff again, `always`: on
 * errors too (404, 412, 501), whose bodies a browser must not sniff either.
 */
function typeLines(format: Format, indent: string, options: NginxOptions): string[] {
  const lines = [
    `${indent}types { }`,
    `${indent}default_type ${nginxQuote(format.mediaType, 'media type')};`,
    `${indent}add_header Cache-Control ${nginxQuote(options.cacheControl(format), 'Cache-Control')};`,
    `${indent}add_header X-Content-Type-Options nosniff always;`,
    ...extraHeaders(format).map(([name, value]) => `${indent}add_header ${plainName(name, `format ${format.name}: header`)} ${nginxQuote(literalText(value, 'header'), 'header')} always;`),
  ];
  if (!isCompressible(format.mediaType)) lines.push(`${indent}gzip off;`);
  if (options.websub !== undefined && options.websub.hubs.length > 0 && isWebSubTopic(format)) {
    // The feed's own URL is the request's path (as sent, still percent-encoded) with its final slash.
    const self = `$${options.name}_websub_self`;
    lines.push(`${indent}add_header Link ${nginxQuote(`${options.websub.hubs.map((hub) => `<${literalText(hub, 'websub hub')}>; rel="hub"`).join(', ')}, <${self}>; rel="self"`, 'Link')};`);
  }
  return lines;
}

/** Text nginx must not read variables in: a literal `$` cannot be written in a quoted value. */
function literalText(value: string, what: string): string {
  if (value.includes('$')) throw new Error(`${what} contains "$", which nginx reads as a variable: ${JSON.stringify(value)}`);
  return value;
}

/**
 * nginx follows no link out of the tree, except with brotli_static: ngx_brotli's static module
 * (Debian's libnginx-mod-http-brotli-static 1.0.0~rc) then finds the .br file for some requests
 * and not for others, depending on the requests before (measured; ngx_brotli issue #134 reports
 * it with `from=`). vidfeeds writes no links; docs/hosting.md says what is given up.
 */
function symlinkLines(options: NginxOptions): string[] {
  if (!options.brotliStatic) return ['    disable_symlinks on from=$document_root;'];
  return [
    '    # No disable_symlinks: with it, ngx_brotli\'s static module misses .br files at random',
    '    # (docs/hosting.md). vidfeeds writes no links; nothing else should write into the tree.',
    '    disable_symlinks off;',
  ];
}

export function nginxConfig(routes: Routes, options: NginxOptions): string {
  const base = options.basePath;
  const prefix = pcreLiteral(base);
  const name = options.name;
  const upstream = options.upstream;
  const lines: string[] = [];
  const out = (...more: string[]) => lines.push(...more);

  out(
    `# nginx configuration of a vidfeeds tree, generated by ${options.generator} from its format table.`,
    '# Regenerate it after upgrading vidfeeds instead of editing it. Include it inside http { }',
    '# (Debian: save it as /etc/nginx/conf.d/<site>.conf, then `nginx -t && systemctl reload nginx`).',
    '',
  );
  if (options.botRate !== undefined) {
    out(
      '# Rate limit for automated clients (seed section 8): requests whose User-Agent looks automated,',
      '# or is missing, are counted per client address; people\'s browsers are not limited.',
      `map $http_user_agent $${name}_automated_client {`,
      `    default "";`,
      `    "" $binary_remote_addr;`,
      `    ${nginxQuote(`~*(${AUTOMATED_USER_AGENTS})`, 'user agent pattern')} $binary_remote_addr;`,
      '}',
      `limit_req_zone $${name}_automated_client zone=${name}_automated:10m rate=${options.botRate};`,
      '',
    );
  }
  if (options.websub !== undefined && options.websub.hubs.length > 0) {
    out(
      '# WebSub: the URL of the feed requested, for its Link header: the path as sent, with its final',
      '# slash, on the base URL\'s scheme and host.',
      `map $request_uri $${name}_websub_self {`,
      `    ${nginxQuote('~^(?<websubpath>[^?]*?)/?(\\?.*)?$', 'pattern')} ${nginxQuote(`${literalText(options.websub.origin, 'base URL')}$websubpath/`, 'URL')};`,
      '}',
      '',
    );
  }
  const postLimit = upstream === undefined ? undefined : (options.postLimit ?? postLimitOf(DEFAULT_CONFIG.recommendationSubmit.perClient));
  if (postLimit !== undefined) {
    out(
      '# Recommendation POSTs per client address (recommendationSubmit.perClient of the configuration):',
      '# a flood is turned away here, before it reaches vidfeeds serve. Other requests are not counted.',
      `map $request_method $${name}_post_client {`,
      `    default "";`,
      `    POST $binary_remote_addr;`,
      '}',
      `limit_req_zone $${name}_post_client zone=${name}_post:10m rate=${postLimit.perMinute}r/m;`,
      '',
    );
  }

  out('server {');
  out(`    listen ${options.listen};`);
  out(`    server_name ${options.serverName};`);
  out(`    root ${literalPath(options.root, '--root')};`);
  out(
    '',
    '    charset off;          # every Content-Type below carries its charset already',
    '    server_tokens off;',
    '    autoindex off;',
    '    merge_slashes off;    # `//user/rss/` is not `/user/rss/`: it gets 404',
    ...symlinkLines(options),
    '    add_header X-Content-Type-Options nosniff always;   # errors too: a 404 may echo the request',
    '    etag on;',
    '',
    '    gzip on;',
    '    gzip_vary on;',
    '    gzip_proxied any;',
    '    gzip_min_length 256;',
  );
  // gzip_types compares the whole Content-Type, parameters included, in a hash whose buckets are too
  // small for ours (nginx: "could not build test_types_hash"). So: every type, and `gzip off` in
  // the locations of a type that does not compress (video files, any such format).
  out('    gzip_types *;');
  if (options.gzipStatic) {
    out(
      '    # The build writes <file>.gz beside each document (`compress` in its configuration): sent',
      '    # to clients that take gzip, with the document\'s Content-Type and ETag/Last-Modified of the .gz.',
      '    gzip_static on;',
    );
  }
  if (options.brotliStatic) {
    out(
      '    # And <file>.br, to clients that take br: needs ngx_brotli\'s static module loaded',
      '    # (Debian: libnginx-mod-http-brotli-static; docs/hosting.md says how to tell).',
      '    brotli_static on;',
    );
  }
  if (options.botRate !== undefined) {
    out('', `    limit_req zone=${name}_automated burst=${options.botBurst ?? 20} nodelay;`, '    limit_req_status 429;', '    limit_req_log_level warn;');
  }
  out(
    '',
    '    # Tricks never reach a file: an encoded slash, backslash or NUL, a `.` or `..` segment in the path.',
    '    if ($request_uri ~* "^[^?]*(%2f|%5c|%00|/(\\.|%2e)(\\.|%2e)?(/|\\?|$))") { return 404; }',
    '    # nginx answers some of them itself with 400 (`/../` above the root): 404 as well.',
    `    error_page 400 =404 /.${name}-not-found;`,
    `    location = /.${name}-not-found { internal; return 404; }`,
    '',
    '    # Only the URLs of the format table are served.',
    '    location / { return 404; }',
  );

  for (const format of routes.site) out('', ...siteLocation(format, base, prefix, options));
  for (const format of routes.keyed) out('', ...keyedLocation(routes, format, base, prefix, options));

  if (upstream !== undefined) {
    out(
      '',
      '    # vidfeeds serve answers what files cannot: parametrised requests and the POST.',
      `    location @${name}_serve {`,
      // A location with its own limit_req inherits none from the server block: the automated one again.
      `        limit_req zone=${name}_post burst=${postLimit!.burst} nodelay;`,
      ...(options.botRate !== undefined ? [`        limit_req zone=${name}_automated burst=${options.botBurst ?? 20} nodelay;`] : []),
      '        limit_req_status 429;',
      '        limit_req_log_level warn;',
      `        error_page 429 @${name}_too_many;`,
      `        proxy_pass http://${upstream};`,
      '        proxy_http_version 1.1;',
      '        proxy_set_header Connection "";',
      '        proxy_set_header Host $host;',
      // vidfeeds serve believes it only from a trusted proxy (recommendationSubmit.trustedProxies).
      '        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
      '        proxy_set_header X-Forwarded-Proto $scheme;',
      '        proxy_intercept_errors off;',
      '        proxy_hide_header X-Content-Type-Options;   # the server block adds it once, always',
      // vidfeeds serve sends Vary itself and compresses for clients that take it; nginx's gzip_vary
      // would add a second Vary to the same answer.
      '        gzip_vary off;',
      // Checked here too: a chunked body is measured only while it is read, in this location.
      `        client_max_body_size ${RECOMMENDATION_POST_MAX_BYTES};`,
      '    }',
      `    location @${name}_too_many {`,
      '        types { }',
      '        default_type "text/plain; charset=utf-8";',
      '        add_header X-Content-Type-Options nosniff always;',
      `        add_header Retry-After ${Math.ceil(60 / postLimit!.perMinute)} always;`,
      '        return 429 "too many requests from your address; try again later\\n";',
      '    }',
    );
  }

  if (options.videoLocation !== undefined && options.videoRoot !== undefined) {
    out('', ...videoLocation(options));
  }
  out('}', '');
  return lines.join('\n');
}

function siteLocation(format: SiteFormat, base: string, prefix: string, options: NginxOptions): string[] {
  const file = plainName(format.file, `format ${format.name}: file`);
  const lines = [`    # ${format.name}: ${urlPattern(format)}`];
  lines.push(`    location = ${nginxQuote(`${base}/${file}`, 'location')} {`, ...typeLines(format, '        ', options), `        try_files /${file} =404;`, '    }');
  if (format.alsoWrites !== undefined) {
    lines.push(
      `    location ~ ${nginxQuote(`^${prefix}/(?<file>${pcreOf(format.alsoWrites, format.name)})$`, 'location')} {`,
      ...typeLines(format, '        ', options),
      '        try_files /$file =404;',
      '    }',
    );
  }
  return lines;
}

function keyedLocation(routes: Routes, format: KeyedFormat, base: string, prefix: string, options: NginxOptions): string[] {
  const dir = plainName(format.dir, `format ${format.name}: dir`);
  const file = plainName(format.file, `format ${format.name}: file`);
  const urlName = plainName(format.urlName, `format ${format.name}: urlName`);
  const name = options.name;
  // A directory URL is also answered without its final slash (routes.ts says why).
  const tail = urlName === '' ? '/?' : `/${pcreLiteral(urlName)}`;
  // The pages of a paged document: a number without leading zeros (PAGE_NUMBER).
  const paged = format.paged === undefined ? '' : `/${pcreLiteral(plainName(format.paged, `format ${format.name}: paged`))}/(?<page>${PAGE_NUMBER.source.slice(1, -1)})`;
  const pattern = `^${prefix}/(?<key>[^/.][^/]*)/${pcreLiteral(dir)}${paged}${tail}$`;
  const lines = [`    # ${format.name}: ${urlPattern(format)} (${bareMediaType(format.mediaType)})`];
  lines.push(`    location ~ ${nginxQuote(pattern, 'location')} {`);
  const body: string[] = [];

  const oembed = routes.oembed !== null && routes.oembed.dir === format.dir && format.scope === 'video' ? routes.oembed : null;
  const dynamicParams: string[] = [];
  if (oembed !== null) dynamicParams.push(...OEMBED_DYNAMIC_PARAMS);
  const isRecommendations = routes.recommendations !== null && routes.recommendations === format;
  if (isRecommendations) dynamicParams.push(RECOMMENDATIONS_PARAM);

  if (options.upstream !== undefined && dynamicParams.length > 0) {
    body.push(`error_page 418 = @${name}_serve;`);
    // So that @serve's own error_page (429 past the limit) still applies after this one.
    body.push('recursive_error_pages on;');
    body.push(`if ($args ~ ${nginxQuote(`(^|&)(${dynamicParams.join('|')})=[^&]`, 'pattern')}) { return 418; }`);
    if (isRecommendations) {
      body.push(`if ($request_method = POST) { return 418; }`);
      body.push(`client_max_body_size ${RECOMMENDATION_POST_MAX_BYTES};`);
    }
  }
  if (oembed !== null && format === oembed.index) {
    // `?format=` on the endpoint: json and xml from their files, any other value 501.
    const values = [...oembed.byFormatParam.keys()];
    body.push(`if ($arg_format !~ ${nginxQuote(`^(|${values.map(pcreLiteral).join('|')})$`, 'pattern')}) { return 501; }`);
    for (const [value, form] of oembed.byFormatParam) {
      if (form === format) continue;
      body.push(`error_page 4${19 + values.indexOf(value)} = @${name}_${form.name.replace(/[^A-Za-z0-9_]/g, '_')};`);
      body.push(`if ($arg_format = ${value}) { return 4${19 + values.indexOf(value)}; }`);
    }
  }
  body.push(...typeLines(format, '', options));
  body.push(`try_files ${nginxQuote(`/${keyedFile({ dir, file, paged: format.paged }, '$key', '$page')}`, 'path')} =404;`);
  lines.push(...body.map((line) => `        ${line}`), '    }');

  if (oembed !== null && format === oembed.index) {
    // Named locations that answer `?format=` with a sibling's file and type.
    for (const form of oembed.byFormatParam.values()) {
      if (form === format) continue;
      lines.push(
        `    location @${name}_${form.name.replace(/[^A-Za-z0-9_]/g, '_')} {`,
        ...typeLines(form, '        ', options),
        `        try_files "/${keyedFile({ dir, file: plainName(form.file, `format ${form.name}: file`) }, '$key')}" =404;`,
        '    }',
      );
    }
  }
  return lines;
}

function videoLocation(options: NginxOptions): string[] {
  const location = options.videoLocation!;
  const lines = [
    '    # Video files. Hot-linking them from other sites is refused when the operator turns it on',
    '    # (seed section 8); requests without a Referer (players, downloads) are let through.',
    `    location ^~ ${nginxQuote(location, '--video-location')} {`,
    `        alias ${literalPath(options.videoRoot!.replace(/\/?$/, '/'), '--video-root')};`,
    `        types { ${VIDEO_TYPES.map(([type, ext]) => `${type} ${ext};`).join(' ')} }`,
    '        default_type application/octet-stream;',
    '        gzip off;',
  ];
  if (options.refuseHotlinks) {
    const hosts = (options.allowReferers ?? []).map((h) => {
      if (!/^[A-Za-z0-9*.:-]+$/.test(h)) throw new Error(`--allow-referer ${JSON.stringify(h)} is not a host name`);
      return h;
    });
    lines.push(`        valid_referers none blocked server_names ${hosts.join(' ')};`.replace(/ ;$/, ';'));
    lines.push('        if ($invalid_referer) { return 403; }');
  }
  lines.push('    }');
  return lines;
}
