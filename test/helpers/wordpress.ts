import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { missingPrograms } from './programs.js';

/**
 * Debian's `wordpress` package (6.1), unmodified, driven headless by `php-cli` against a MariaDB
 * database the test started: installed once, then asked to embed URLs the three ways a site owner
 * meets oEmbed: `wp_oembed_get()` (what themes and plugins call), the block editor's
 * `/oembed/1.0/proxy` REST route, and a published post whose content is the URL on its own line,
 * through `the_content`. WordPress reads its settings from /etc/wordpress by host name; the test
 * writes nothing there: a bootstrap of its own defines the same constants and loads
 * `wp-settings.php` from /usr/share/wordpress, with its content directory in the test's folder.
 */

export const WORDPRESS = '/usr/share/wordpress';

export function wordpressMissing(): string | null {
  const programs = missingPrograms('the WordPress oEmbed test', { php: 'php-cli', '/usr/sbin/mariadbd': 'mariadb-server' });
  if (programs !== null) return programs;
  const missing = !existsSync(join(WORDPRESS, 'wp-settings.php'))
    ? 'wordpress'
    : spawnSync('php', ['-r', 'exit(extension_loaded("mysqli") ? 0 : 1);']).status !== 0
      ? 'php-mysql'
      : null;
  if (missing === null) return null;
  const message = `skipped the WordPress oEmbed test: ${missing} not installed (apt-get install ${missing}; .ci/run installs it)`;
  console.warn(message);
  return message;
}

export interface WordpressEmbeds {
  /** wp_oembed_get($url): the HTML, or false. */
  oembedGet: string | false;
  /** The editor's /oembed/1.0/proxy: its status and the html of its answer. */
  proxy: { status: number; html: string | null };
  /** A published post holding the URL alone on a line, through the_content. */
  content: string;
}

/** The bootstrap every script starts with: the settings wp-config.php would give, then WordPress. */
function bootstrap(database: { port: number; name: string; user: string; password: string }, content: string, installing: boolean): string {
  return `<?php
error_reporting(E_ALL & ~E_DEPRECATED & ~E_NOTICE & ~E_WARNING);
$_SERVER['HTTP_HOST'] = 'wordpress.test';
$_SERVER['SERVER_NAME'] = 'wordpress.test';
$_SERVER['REQUEST_URI'] = '/';
define('DB_NAME', ${JSON.stringify(database.name)});
define('DB_USER', ${JSON.stringify(database.user)});
define('DB_PASSWORD', ${JSON.stringify(database.password)});
define('DB_HOST', '127.0.0.1:${database.port}');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
define('WP_CONTENT_DIR', ${JSON.stringify(content)});
define('WP_HOME', 'http://wordpress.test');
define('WP_SITEURL', 'http://wordpress.test');
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
${installing ? "define('WP_INSTALLING', true);" : ''}
$table_prefix = 'wp_';
define('ABSPATH', '${WORDPRESS}/');
require ABSPATH . 'wp-settings.php';
`;
}

/**
 * What WordPress needs to fetch from loopback on any port: it refuses both by default
 * (wp_http_validate_url), which a site embedding from another host never meets.
 */
const LOOPBACK = `
add_filter('http_request_host_is_external', '__return_true');
add_filter('http_allowed_safe_ports', function ($ports) { return range(1, 65535); });
`;

/** Installs WordPress into the database, then embeds each URL the three ways. */
export async function wordpressEmbeds(dir: string, database: { port: number; name: string; user: string; password: string }, urls: readonly string[]): Promise<Record<string, WordpressEmbeds>> {
  const content = join(dir, 'wp-content');
  mkdirSync(content, { recursive: true });
  const install = join(dir, 'install.php');
  writeFileSync(
    install,
    `${bootstrap(database, content, true)}
require_once ABSPATH . 'wp-admin/includes/upgrade.php';
$result = wp_install('Embedding test', 'admin', 'admin@wordpress.test', true, '', 'password');
echo json_encode(array('user' => $result['user_id']));
`,
  );
  await run(install);
  const embed = join(dir, 'embed.php');
  writeFileSync(
    embed,
    `${bootstrap(database, content, false)}${LOOPBACK}
wp_set_current_user(1);
$urls = json_decode(file_get_contents('php://stdin'), true);
$out = array();
foreach ($urls as $url) {
  $request = new WP_REST_Request('GET', '/oembed/1.0/proxy');
  $request->set_query_params(array('url' => $url));
  $response = rest_do_request($request);
  $data = $response->get_data();
  $post_id = wp_insert_post(array('post_title' => 'A post with a video', 'post_content' => "Look:\\n\\n" . $url . "\\n\\nNice.", 'post_status' => 'publish', 'post_author' => 1));
  $GLOBALS['post'] = get_post($post_id);
  setup_postdata($GLOBALS['post']);
  $content = apply_filters('the_content', $GLOBALS['post']->post_content);
  $out[$url] = array(
    'oembedGet' => wp_oembed_get($url),
    'proxy' => array('status' => $response->get_status(), 'html' => is_object($data) && isset($data->html) ? $data->html : (is_array($data) && isset($data['html']) ? $data['html'] : null)),
    'content' => $content,
  );
}
echo json_encode($out);
`,
  );
  return JSON.parse(await run(embed, JSON.stringify(urls))) as Record<string, WordpressEmbeds>;
}

/**
 * Runs a script with php-cli without blocking: the servers WordPress fetches from run in the
 * test's own process.
 */
function run(script: string, input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('php', [script], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => {
      const start = stdout.indexOf('{');
      if (code !== 0 || start < 0) reject(new Error(`php ${script} failed (${code}): ${stdout}${stderr}`));
      else resolve(stdout.slice(start));
    });
    child.stdin.end(input);
  });
}
