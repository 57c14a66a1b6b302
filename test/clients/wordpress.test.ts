import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { parseFragment } from 'parse5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.js';
import { FORMATS } from '../../src/formats/registry.js';
import { routesOf } from '../../src/hosting/routes.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { DirectoryWriter } from '../../src/pipeline/write/output-writer.js';
import { listen, type RunningServer } from '../../src/serve/http-server.js';
import { SiteServer } from '../../src/serve/site-server.js';
import { cli } from '../helpers/cli.js';
import { freePort, http } from '../helpers/http.js';
import { startMariadb, type RunningMariadb } from '../helpers/mariadb.js';
import { buildInMemory, createDemoDb } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';
import { wordpressEmbeds, wordpressMissing, type WordpressEmbeds } from '../helpers/wordpress.js';

/**
 * WordPress, the consumer behind some four in ten websites, embedding the demo's videos as a site
 * owner would: Debian's `wordpress` (6.1) with `php-cli`, in a MariaDB the test starts. The site's
 * own video pages (a small server of the test's own) carry the head snippet `vidfeeds head` prints;
 * the tree is served by `vidfeeds serve`, which answers WordPress's `maxwidth`/`maxheight`.
 * `wp_oembed_get()`, the block editor's `/oembed/1.0/proxy` and a published post's `the_content`
 * must each give an iframe of the video's embed page for every sampled video (WordPress keeps only
 * an iframe from a provider it does not list, and embeds nothing without one), and the iframe's
 * `src` must answer 200 `text/html` with the player and nothing that refuses framing.
 */

const skip = wordpressMissing();
const SAMPLED = 5;

interface Element {
  nodeName: string;
  attrs?: Array<{ name: string; value: string }>;
  childNodes?: Element[];
}

function iframesOf(html: string): Array<Record<string, string>> {
  const found: Array<Record<string, string>> = [];
  const walk = (node: Element) => {
    if (node.nodeName === 'iframe') found.push(Object.fromEntries((node.attrs ?? []).map((a) => [a.name, a.value])));
    for (const child of node.childNodes ?? []) walk(child);
  };
  walk(parseFragment(html) as unknown as Element);
  return found;
}

describe.skipIf(skip !== null)('WordPress 6.1 embedding the videos', () => {
  let mariadb: RunningMariadb;
  let serve: RunningServer;
  let serveCore: SiteServer;
  let pages: Server;
  let readDb: Database.Database;
  let results: Record<string, WordpressEmbeds>;
  const embedOf = new Map<string, string>();

  beforeAll(async () => {
    const work = tempDir('vidfeeds-wordpress-').dir;
    const { db, file } = createDemoDb();
    const ids = db
      .prepare<[], { public_id: string }>(
        `SELECT v.public_id FROM videos v JOIN users u ON u.id = v.user_id WHERE v.visibility = 'public' AND u.state = 'active'
         ORDER BY (v.title LIKE '%<script>%') DESC, v.id LIMIT ${SAMPLED}`,
      )
      .all()
      .map((r) => r.public_id);
    db.close();

    // The site's own video pages: each carries the head snippet in its <head>.
    const servePort = await freePort();
    const pagesPort = await freePort();
    const settings = { baseUrl: `http://127.0.0.1:${servePort}`, pages: { video: `http://127.0.0.1:${pagesPort}/watch/{video}/` } };
    const configFile = join(work, 'vidfeeds.config.json');
    writeFileSync(configFile, JSON.stringify(settings));
    const snippets = new Map<string, string>();
    for (const id of ids) {
      const printed = cli(['head', '--config', configFile, '--db', file, id]);
      expect(printed.code, printed.stderr).toBe(0);
      snippets.set(`/watch/${encodeURIComponent(id)}/`, printed.stdout);
    }
    pages = createServer((req, res) => {
      const head = snippets.get(new URL(req.url ?? '/', 'http://x').pathname);
      if (head === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(`<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>A video</title>\n${head}</head><body><p>The video's page.</p></body></html>\n`);
    });
    await new Promise<void>((ready) => pages.listen(pagesPort, '127.0.0.1', ready));

    // The tree, served by vidfeeds serve at the base URL.
    const config = loadConfig({ configFile });
    const tree = join(work, 'out');
    const writer = new DirectoryWriter(tree);
    const built = buildInMemory(file, { config, writer });
    writer.close();
    expect(built.report.failed).toEqual([]);
    readDb = new Database(file, { readonly: true });
    serveCore = new SiteServer({ root: tree, site: createSiteContext(config, FORMATS, new Date()), routes: routesOf(FORMATS), db: readDb, openForWriting: () => new Database(file) });
    serve = await listen(serveCore, { host: '127.0.0.1', port: servePort });
    for (const id of ids) embedOf.set(`http://127.0.0.1:${pagesPort}/watch/${encodeURIComponent(id)}/`, `http://127.0.0.1:${servePort}/${encodeURIComponent(id)}/embed/`);

    mariadb = await startMariadb();
    await mariadb.admin.query("CREATE DATABASE wordpress CHARACTER SET utf8mb4; CREATE USER 'wp'@'%' IDENTIFIED BY 'wp-secret'; GRANT ALL ON wordpress.* TO 'wp'@'%'");
    results = await wordpressEmbeds(work, { port: mariadb.port, name: 'wordpress', user: 'wp', password: 'wp-secret' }, [...embedOf.keys()]);
  }, 240_000);

  afterAll(async () => {
    await mariadb?.stop();
    await serve?.close();
    serveCore?.close();
    readDb?.close();
    await new Promise((done) => pages?.close(done));
  });

  /** The one iframe of an embed WordPress made, pointing at the video's embed page. */
  function expectIframe(html: string | false | null, page: string, how: string): Record<string, string> {
    expect(typeof html, `${how} of ${page}`).toBe('string');
    const iframes = iframesOf(html as string);
    expect(iframes, `${how} of ${page}: ${String(html)}`).toHaveLength(1);
    const [iframe] = iframes;
    // WordPress sandboxes a provider it does not list, and adds a secret to the src's fragment.
    expect(iframe!.sandbox, how).toBe('allow-scripts');
    expect(iframe!.src!.replace(/#.*$/, ''), how).toBe(embedOf.get(page));
    expect(iframe!.title, how).not.toBe('');
    return iframe!;
  }

  it('embeds every sampled video with wp_oembed_get(), the editor proxy and a published post', () => {
    expect(Object.keys(results).sort()).toEqual([...embedOf.keys()].sort());
    for (const [page, embeds] of Object.entries(results)) {
      expectIframe(embeds.oembedGet, page, 'wp_oembed_get');
      expect(embeds.proxy.status, page).toBe(200);
      expectIframe(embeds.proxy.html, page, 'the oEmbed proxy');
      expectIframe(embeds.content, page, 'the_content');
      // The page URL no longer stands as plain text in the post.
      expect(embeds.content).not.toContain(`<p>${page}</p>`);
    }
  });

  it("gets the player from each iframe's src, with nothing that refuses framing", async () => {
    for (const embed of new Set(embedOf.values())) {
      const url = new URL(embed);
      const answer = await http(Number(url.port), url.pathname);
      expect(answer.status, embed).toBe(200);
      expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(answer.headers['x-frame-options']).toBeUndefined();
      expect(answer.headers['content-security-policy']).toBe('frame-ancestors *');
      expect(answer.text).toMatch(/<video [^>]*controls/);
    }
  });
});
