import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli.js';
import { createTestDb, insertUser, insertVideo } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';
import { readTree, type TreeFile } from '../helpers/tree.js';

/**
 * The embed page and the head snippet file (`videoHead.file`) under the rules of every document,
 * through the command line: a title edit rewrites the video's oEmbed forms, its embed page and its
 * head snippet, and nothing else of the video's or any other video's; a video made private loses
 * all of them; `vidfeeds check` verifies them and finds an embed page edited by hand; a
 * configuration that stops asking for the head files removes them.
 */

const VIDEO_FILES = ['oembed/index.json', 'oembed/json', 'oembed/xml', 'oembed/html', 'embed/index.html', 'embed/head.html'];

function changed(before: Map<string, TreeFile>, after: Map<string, TreeFile>): string[] {
  const paths = new Set([...before.keys(), ...after.keys()]);
  return [...paths].filter((p) => before.get(p)?.ino !== after.get(p)?.ino || before.get(p)?.mtimeNs !== after.get(p)?.mtimeNs).sort();
}

describe('the embed page in incremental builds', () => {
  it('is rewritten with its video, removed with it, and verified by check', () => {
    const { db, file } = createTestDb();
    const user = insertUser(db, { username: 'uploader' });
    insertVideo(db, user.id, { public_id: 'clip', title: 'Before' });
    insertVideo(db, user.id, { public_id: 'other', title: 'Other' });
    const work = tempDir('vidfeeds-embed-incremental-').dir;
    const out = join(work, 'out');
    const configFile = join(work, 'vidfeeds.config.json');
    writeFileSync(configFile, JSON.stringify({ videoHead: { file: true } }));
    const build = () => {
      const result = cli(['build', '--config', configFile, '--db', file, '--out', out]);
      expect(result.code, result.stderr).toBe(0);
      return result.stderr;
    };
    const check = () => cli(['check', '--config', configFile, '--db', file, '--out', out]);

    build();
    const first = readTree(out);
    for (const id of ['clip', 'other']) for (const f of VIDEO_FILES) expect(first.has(`${id}/${f}`), `${id}/${f}`).toBe(true);
    expect(first.get('clip/embed/index.html')!.body.toString()).toContain('<title>Before – ');
    expect(check().code).toBe(0);

    db.prepare(`UPDATE videos SET title = 'After </script>' WHERE public_id = 'clip'`).run();
    expect(build()).toMatch(/incremental/);
    const second = readTree(out);
    const rewritten = changed(first, second);
    // The video's own documents, all of them, and beside them only documents that list its title.
    expect(rewritten.filter((p) => p.startsWith('clip/'))).toEqual(VIDEO_FILES.map((f) => `clip/${f}`).sort());
    expect(rewritten.filter((p) => p.startsWith('other/'))).toEqual([]);
    for (const path of rewritten.filter((p) => !p.startsWith('clip/') && !p.startsWith('sitemap'))) {
      expect(second.get(path)!.body.toString(), path).toMatch(/After (&lt;|<)\/script(&gt;|>)|After \\u003c\/script\\u003e/);
    }
    expect(second.get('clip/embed/index.html')!.body.toString()).toContain('<title>After &lt;/script&gt; – ');
    expect(second.get('clip/embed/head.html')!.body.toString()).toContain('"name":"After \\u003c/script\\u003e"');
    expect(check().code).toBe(0);

    // An embed page changed by hand is found.
    writeFileSync(join(out, 'clip', 'embed', 'index.html'), '<!DOCTYPE html><title>changed</title>');
    const tampered = check();
    expect(tampered.code).toBe(1);
    expect(tampered.stdout + tampered.stderr).toContain('clip/embed/index.html');
    build();

    db.prepare(`UPDATE videos SET visibility = 'private' WHERE public_id = 'clip'`).run();
    expect(build()).toMatch(/incremental/);
    const third = readTree(out);
    expect([...third.keys()].filter((p) => p.startsWith('clip/'))).toEqual([]);
    for (const f of VIDEO_FILES) expect(third.has(`other/${f}`)).toBe(true);
    expect(check().code).toBe(0);

    // Without videoHead.file the head files go, and nothing else.
    writeFileSync(configFile, '{}');
    expect(build()).toMatch(/full build/);
    const fourth = readTree(out);
    expect([...third.keys()].filter((p) => !fourth.has(p))).toEqual(['other/embed/head.html']);
    expect(check().code).toBe(0);
  });
});
