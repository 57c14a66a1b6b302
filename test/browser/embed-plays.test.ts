import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { chromium, type BrowserContext, type Frame, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config/config-schema.js';
import { FORMATS } from '../../src/formats/registry.js';
import { routesOf } from '../../src/hosting/routes.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { DirectoryWriter } from '../../src/pipeline/write/output-writer.js';
import { listen, type RunningServer } from '../../src/serve/http-server.js';
import { SiteServer } from '../../src/serve/site-server.js';
import { freePort, http } from '../helpers/http.js';
import { missingPrograms } from '../helpers/programs.js';
import { buildInMemory, createDemoDb, testConfig } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The embeds in a real browser: Debian's headless Chromium, driven by playwright-core (which
 * downloads no browser). The default oEmbed `html` (an iframe of the embed page) is pasted into a
 * consumer's page on another origin with WordPress's `sandbox="allow-scripts"`, and the embed page
 * comes from `vidfeeds serve` on a tree built to a folder, with the headers it sends; the inline
 * `html` (`oembed.html: "inline"`) is pasted into a page too, and the `/oembed/html` page opened.
 * The demo video's file, poster and captions point at a localhost server of the test's own: a
 * one-second VP8 WebM test pattern, a PNG and a WebVTT file made here (ffmpeg, from Debian). The
 * video must decode a frame: readyState of at least HAVE_CURRENT_DATA and a drawn frame that is
 * not one colour. A screenshot of each page is kept under test-artifacts/ (gitignored).
 */

const CHROMIUM = '/usr/bin/chromium';
const skip = missingPrograms('the browser test of the default embed', { [CHROMIUM]: 'chromium', ffmpeg: 'ffmpeg' });
const ARTIFACTS = resolve(import.meta.dirname, '../../test-artifacts');

/** Flags that let Debian's Chromium run headless here, offline and quiet. */
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A consumer's page holding an embed, as oEmbed consumers paste the `html` field. */
function consumerPage(html: string): string {
  return `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>A consumer's page</title></head><body><h1>Embedded</h1>\n${html}\n</body></html>\n`;
}

function ffmpeg(args: string[]): void {
  const result = spawnSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`ffmpeg ${args.join(' ')} failed: ${result.stderr}`);
}

/** What the page reports about the first `<video>` once it has played a little. */
interface Playback {
  readyState: number;
  currentSrc: string;
  canPlayType: string;
  width: number;
  height: number;
  colours: number;
  /** Frames Chromium decoded (getVideoPlaybackQuality). */
  decodedFrames: number;
  captionCues: number;
  error: string | null;
}

describe.skipIf(skip !== null)('the default embed in headless Chromium', () => {
  let server: Server;
  let origin: string;
  let context: BrowserContext;
  const pages = new Map<string, string>();
  let title = '';
  let serve: RunningServer | undefined;
  let serveCore: SiteServer | undefined;
  let readDb: Database.Database | undefined;
  let embedUrl = '';

  beforeAll(async () => {
    const { dir } = tempDir('vidfeeds-browser-');
    // A one-second test pattern in VP8/WebM (Debian's Chromium plays VP8 and VP9, maybe not H.264).
    ffmpeg(['-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10', '-t', '1', '-c:v', 'libvpx', '-b:v', '200k', join(dir, 'clip.webm')]);
    ffmpeg(['-f', 'lavfi', '-i', 'smptebars=size=160x120', '-frames:v', '1', join(dir, 'poster.png')]);
    const files: Record<string, [string, Buffer]> = {
      '/media/clip.webm': ['video/webm', readFileSync(join(dir, 'clip.webm'))],
      '/media/poster.png': ['image/png', readFileSync(join(dir, 'poster.png'))],
      '/media/clip.vtt': ['text/vtt; charset=utf-8', Buffer.from('WEBVTT\n\n00:00.000 --> 00:01.000\nA test pattern\n')],
    };
    server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      const page = pages.get(path);
      const [type, body] = page !== undefined ? ['text/html; charset=utf-8', Buffer.from(page)] : (files[path] ?? []);
      if (body === undefined) {
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
        return;
      }
      // CORS for the media, which the framed embed asks for (player.crossOrigin): a sandboxed frame's
      // origin is opaque, so a <track> loads there only through CORS.
      res.writeHead(200, { 'Content-Type': type!, 'Content-Length': body.length, 'Access-Control-Allow-Origin': '*' }).end(body);
    });
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    // A published demo video with a hostile title, its files moved to the test's server.
    const { db, file } = createDemoDb();
    const video = db
      .prepare<[], { public_id: string; title: string }>(
        `SELECT v.public_id, v.title FROM videos v JOIN users u ON u.id = v.user_id
         WHERE v.visibility = 'public' AND u.state = 'active' AND v.title LIKE '%<script>%' ORDER BY v.id LIMIT 1`,
      )
      .get()!;
    db.prepare(`UPDATE videos SET file_url = ?, file_type = 'video/webm', thumbnail_url = ?, captions_url = ? WHERE public_id = ?`).run(
      `${origin}/media/clip.webm`,
      `${origin}/media/poster.png`,
      `${origin}/media/clip.vtt`,
      video.public_id,
    );
    // The inline player: the html field pasted into a page, and the /oembed/html form as served.
    const inline = buildInMemory(file, { config: testConfig({ oembed: { html: 'inline' } }), only: new Set(['oembed', 'oembed-html']) });
    expect(inline.report.failed).toEqual([]);
    const oembed = JSON.parse(inline.writer.text(`${video.public_id}/oembed/index.json`)) as { html: string; title: string };
    title = oembed.title;
    pages.set('/host.html', consumerPage(oembed.html));
    pages.set('/oembed.html', inline.writer.text(`${video.public_id}/oembed/html`));

    // The default: a tree built to a folder and served by vidfeeds serve at the base URL; the
    // consumer's page on another origin (localhost, not 127.0.0.1) frames it as WordPress does.
    const servePort = await freePort();
    const config = testConfig({ baseUrl: `http://127.0.0.1:${servePort}`, player: { ...DEFAULT_CONFIG.player, crossOrigin: true } });
    const tree = join(dir, 'out');
    const writer = new DirectoryWriter(tree);
    const built = buildInMemory(file, { config, writer, only: new Set(['oembed', 'embed']) });
    writer.close();
    expect(built.report.failed).toEqual([]);
    db.close();
    readDb = new Database(file, { readonly: true });
    serveCore = new SiteServer({ root: tree, site: createSiteContext(config, FORMATS, new Date()), routes: routesOf(FORMATS), db: readDb, openForWriting: () => new Database(file) });
    serve = await listen(serveCore, { host: '127.0.0.1', port: servePort });
    const framed = JSON.parse(readFileSync(join(tree, video.public_id, 'oembed', 'index.json'), 'utf8')) as { html: string };
    embedUrl = `http://127.0.0.1:${servePort}/${encodeURIComponent(video.public_id)}/embed/`;
    expect(framed.html).toContain(`src="${embedUrl}"`);
    pages.set('/framed.html', consumerPage(framed.html.replace('<iframe ', '<iframe sandbox="allow-scripts" ')));

    const profile = tempDir('vidfeeds-chromium-profile-');
    context = await chromium.launchPersistentContext(profile.dir, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_FLAGS,
      viewport: { width: 640, height: 480 },
    });
  });

  afterAll(async () => {
    await context?.close();
    await serve?.close();
    serveCore?.close();
    readDb?.close();
    await new Promise((done) => server?.close(done));
  });

  /**
   * Opens a page, starts the video after a click, and reports what it decoded. `framed`: the video
   * is inside the page's one iframe, and the page is opened from another origin than the frame's.
   */
  async function play(path: string, framed: boolean): Promise<{ page: Page; frame: Frame; before: number; playback: Playback; dialogs: string[] }> {
    const page = await context.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto(`${framed ? origin.replace('127.0.0.1', 'localhost') : origin}${path}`, { waitUntil: 'load' });
    const frame = framed ? (await (await page.waitForSelector('iframe')).contentFrame())! : page.mainFrame();
    await frame.waitForSelector('video', { state: 'attached' });
    const video = frame.locator('video');
    expect(await video.count()).toBe(1);
    // preload="none": nothing is fetched until the viewer asks.
    const before = await video.evaluate((v: HTMLVideoElement) => v.readyState);
    // A click gives the page user activation (as a viewer's would); then play(), since a click on
    // the picture does not toggle Chromium's native controls.
    await video.click();
    await video.evaluate((v: HTMLVideoElement) => v.play());
    await frame.waitForFunction(() => {
      const v = document.querySelector('video')!;
      return v.error !== null || (v.readyState >= 2 && v.currentTime > 0);
    });
    const playback = await video.evaluate(async (v: HTMLVideoElement): Promise<Playback> => {
      if (v.error === null) {
        // A frame the browser has decoded and presented, drawn to a canvas.
        await new Promise<void>((presented) => v.requestVideoFrameCallback(() => presented()));
      }
      const canvas = document.createElement('canvas');
      canvas.width = v.videoWidth;
      canvas.height = v.videoHeight;
      const context2d = canvas.getContext('2d')!;
      let colours = 0;
      if (v.videoWidth > 0) {
        // In the sandboxed frame (an opaque origin) the pixels are readable through CORS only.
        context2d.drawImage(v, 0, 0);
        const pixels = context2d.getImageData(0, 0, canvas.width, canvas.height).data;
        const seen = new Set<number>();
        for (let i = 0; i < pixels.length; i += 4) seen.add((pixels[i]! << 16) | (pixels[i + 1]! << 8) | pixels[i + 2]!);
        colours = seen.size;
      }
      v.pause();
      const track = v.textTracks[0];
      return {
        readyState: v.readyState,
        currentSrc: v.currentSrc,
        canPlayType: v.canPlayType(v.querySelector('source')!.type),
        width: v.videoWidth,
        height: v.videoHeight,
        colours,
        decodedFrames: v.getVideoPlaybackQuality().totalVideoFrames,
        captionCues: track?.cues?.length ?? 0,
        error: v.error === null ? null : `${v.error.code} ${v.error.message}`,
      };
    });
    return { page, frame, before, playback, dialogs };
  }

  for (const [name, path, framed] of [
    ['the default oEmbed html (an iframe of the embed page) in a cross-origin page, sandboxed as WordPress does', '/framed.html', true],
    ['the inline oEmbed html pasted into a consumer page', '/host.html', false],
    ['the inline /oembed/html page', '/oembed.html', false],
  ] as const) {
    it(`plays ${name}: a decoded frame, captions loaded, no script run`, async () => {
      const { page, frame, before, playback, dialogs } = await play(path, framed);
      expect(before).toBe(0);
      expect(playback.error).toBeNull();
      expect(playback.canPlayType).not.toBe('');
      expect(playback.currentSrc).toBe(`${origin}/media/clip.webm`);
      expect(playback.readyState).toBeGreaterThanOrEqual(2);
      expect([playback.width, playback.height]).toEqual([160, 120]);
      // The test pattern has many colours; a blank or failed frame has one.
      expect(playback.colours).toBeGreaterThan(8);
      expect(playback.decodedFrames).toBeGreaterThan(0);
      expect(playback.captionCues).toBe(1);
      // The demo title holds <script>alert(...)</script> and an onmouseover: none of it ran.
      expect(dialogs).toEqual([]);
      expect(await frame.locator('video').getAttribute('title')).toBe(title);
      expect(await frame.locator('script').count()).toBe(0);
      if (framed) await expectFillsItsFrame(page, frame);

      mkdirSync(ARTIFACTS, { recursive: true });
      const screenshot = join(ARTIFACTS, `embed-html5${path.replace(/\W+/g, '-').replace(/-html$/, '')}.png`);
      await page.screenshot({ path: screenshot });
      console.log(`screenshot of the embed (${name}): ${screenshot}`);
      await page.close();
    });
  }

  /** The embed page in its frame: served to be framed, the player filling the frame, the title a link out of it. */
  async function expectFillsItsFrame(page: Page, frame: Frame): Promise<void> {
    expect(frame.url()).toBe(embedUrl);
    expect(new URL(page.url()).origin).not.toBe(new URL(embedUrl).origin);
    const served = await http(Number(new URL(embedUrl).port), new URL(embedUrl).pathname);
    expect(served.status).toBe(200);
    expect(served.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(served.headers['content-security-policy']).toBe('frame-ancestors *');
    expect(served.headers['x-frame-options']).toBeUndefined();
    const iframe = (await page.locator('iframe').boundingBox())!;
    expect([iframe.width, iframe.height]).toEqual([400, 300]);
    const player = (await frame.locator('video').boundingBox())!;
    expect(player).toEqual(iframe);
    const link = frame.locator('.title a');
    expect(await link.textContent()).toBe(title);
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(await link.getAttribute('rel')).toBe('noopener');
  }
});
