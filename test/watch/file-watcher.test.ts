import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { watchInputs } from '../../src/watch/file-watcher.js';
import { cleanUpAfterTest, useTempDir } from '../helpers/temp-dir.js';
import { until } from '../helpers/until.js';

/**
 * The watcher on real files. An editor that saves in place truncates the file and then writes it;
 * whoever reads the file on the first event may read it empty, and the write's own event comes
 * within chokidar's 50 ms of the first, which chokidar drops. The watcher must still report the
 * file once more after the last write, or the session keeps the empty template until the next edit.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('file watcher', () => {
  it('reports a template again after a write that follows its first event within moments', async () => {
    const dir = useTempDir();
    const template = join(dir, 'embed.hbs');
    writeFileSync(template, 'old');
    const read: string[] = [];
    const watcher = watchInputs({ db: join(dir, 'site.sqlite'), config: null, templateDirs: [dir] }, (_kind, path) => {
      if (path === template) read.push(readFileSync(template, 'utf8'));
    }, (message) => {
      throw new Error(message);
    });
    cleanUpAfterTest(() => watcher.close());
    await watcher.ready();

    writeFileSync(template, ''); // the truncation, seen on its own
    expect(await until(() => read.length > 0, 10_000), 'the first report').toBe(true);
    writeFileSync(template, 'new'); // the write, well inside the first event's 50 ms
    await sleep(400);
    expect(read[0]).toBe('');
    expect(read.at(-1)).toBe('new');
  });
});
