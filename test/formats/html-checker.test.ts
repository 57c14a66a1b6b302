import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEMO_DEFAULTS } from '../../src/db/demo-data.js';
import { missingPrograms } from '../helpers/programs.js';
import { buildInMemory, createDemoDb } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The Nu HTML checker (the W3C's HTML conformance checker; the `vnu-jar` npm package, run with
 * Debian's java) on every HTML document of the demo site, in one JVM run: each user's hCard page,
 * each video's embed page, and each video's default embed (the oEmbed `html` field, which
 * `/oembed/html` is byte for byte: an iframe of the embed page) as a consumer pastes it into a page.
 */

const skip = missingPrograms('the Nu HTML checker test', { java: 'default-jre-headless' });
const VNU_JAR = String(createRequire(import.meta.url)('vnu-jar'));

interface NuMessage {
  type: string;
  subType?: string;
  url: string;
  lastLine?: number;
  message: string;
}

/** Checks the documents (name → HTML) in one run of the checker; returns its messages by name. */
function nuCheck(documents: Record<string, string>): Record<string, string[]> {
  const { dir } = tempDir('vidfeeds-nu-');
  const byFile = new Map<string, string>();
  Object.entries(documents).forEach(([name, html], i) => {
    const file = join(dir, `${i}.html`);
    writeFileSync(file, html);
    byFile.set(`file:${file}`, name);
  });
  const result = spawnSync('java', ['-jar', VNU_JAR, '--format', 'json', '--exit-zero-always', ...[...byFile.keys()].map((url) => url.slice('file:'.length))], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`the Nu HTML checker failed to run: ${result.stderr}`);
  // The checker reports on stderr, as one JSON object.
  const { messages } = JSON.parse(result.stderr) as { messages: NuMessage[] };
  const out: Record<string, string[]> = {};
  for (const m of messages) {
    if (m.type === 'info' && m.subType !== 'warning') continue;
    const name = byFile.get(m.url) ?? m.url;
    (out[name] ??= []).push(`${m.subType ?? m.type} line ${m.lastLine ?? '?'}: ${m.message}`);
  }
  return out;
}

/** A consumer's page holding an embed, as oEmbed consumers paste the `html` field. */
function consumerPage(html: string): string {
  return `<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>A page that embeds a video</title>\n</head>\n<body>\n<main>\n${html}\n</main>\n</body>\n</html>\n`;
}

describe.skipIf(skip !== null)('the Nu HTML checker', () => {
  it('accepts every hCard page, every embed page and every default embed of the demo in a page of a consumer, and refuses a bare fragment as a page', () => {
    // The demo `npm run demo` builds (60 users, 217 published videos today), not the tests' smaller one.
    const { file } = createDemoDb(DEMO_DEFAULTS);
    const { writer, report } = buildInMemory(file, { only: new Set(['hcard', 'oembed', 'oembed-html', 'embed']) });
    expect(report.failed).toEqual([]);
    const documents: Record<string, string> = {};
    let hcards = 0;
    let videos = 0;
    let embedPages = 0;
    for (const [path, body] of writer.files) {
      const text = body.toString('utf8');
      if (path.endsWith('/hcard/index.html')) {
        documents[path] = text;
        hcards++;
      } else if (path.endsWith('/embed/index.html')) {
        documents[path] = text;
        embedPages++;
      } else if (path.endsWith('/oembed/html')) {
        // The bare markup, byte for byte the html field, which is checked below in a consumer's page.
        expect(text, path).toBe((JSON.parse(writer.text(path.replace(/html$/, 'index.json'))) as { html: string }).html);
      } else if (path.endsWith('/oembed/index.json')) {
        documents[`${path} html field in a page`] = consumerPage((JSON.parse(text) as { html: string }).html);
        videos++;
      }
    }
    expect(hcards).toBeGreaterThan(30);
    expect(videos).toBeGreaterThan(200);
    expect(embedPages).toBe(videos);
    // A control: the checker does refuse what is not a valid document (no doctype, no title).
    const anyVideo = [...writer.files.keys()].find((name) => name.endsWith('/oembed/html'))!;
    const bare = writer.text(anyVideo);
    const control = 'a bare embed fragment';

    const messages = nuCheck({ ...documents, [control]: bare });
    expect(messages[control]!.join('\n')).toMatch(/Start tag seen without seeing a doctype first/);
    delete messages[control];
    // The one warning the iframe draws, and the only one allowed: `frameborder="0"` is obsolete in
    // HTML, but it is the border switch that consumers which strip `style` keep (WordPress).
    for (const [name, list] of Object.entries(messages)) {
      if (!name.endsWith('html field in a page')) continue;
      expect(list, name).toEqual(['warning line 9: The “frameborder” attribute on the “iframe” element is obsolete. Use CSS instead.']);
      delete messages[name];
    }
    expect(messages).toEqual({});
  });
});
