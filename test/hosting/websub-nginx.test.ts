import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { freePort, http } from '../helpers/http.js';
import { nginxMainConfig, startNginx, type RunningNginx } from '../helpers/nginx.js';
import { createDemoDb } from '../helpers/site-fixture.js';
import { tempDir } from '../helpers/temp-dir.js';

/** The generated nginx configuration sends a feed's WebSub Link header, checked in Debian's nginx. */

const HUBS = ['https://hub.example.net/', 'https://push.example.org/hub?x=1'];
let nginx: RunningNginx | undefined;
let port: number;
let work: { dir: string; cleanup: () => void };
let site: ReturnType<typeof createDemoDb>;

beforeAll(async () => {
  work = tempDir('vidfeeds-websub-nginx-');
  site = createDemoDb({ users: 3, seed: 2 });
  const root = join(work.dir, 'out');
  const config = join(work.dir, 'vidfeeds.config.json');
  writeFileSync(config, JSON.stringify({ baseUrl: 'https://videos.example.org/clips', websub: { hubs: HUBS } }));
  expect(cli(['build', '--db', site.file, '--out', root, '--config', config, '--no-notify']).code).toBe(0);
  port = await freePort();
  const generated = cli(['hosting', 'nginx', '--root', root, '--listen', `127.0.0.1:${port}`, '--config', config]);
  expect(generated.code, generated.stderr).toBe(0);
  const prefix = join(work.dir, 'nginx');
  mkdirSync(prefix);
  nginx = await startNginx(prefix, nginxMainConfig(prefix, generated.stdout), [port]);
});

afterAll(async () => {
  await nginx?.stop();
  site?.cleanup();
  work?.cleanup();
});

describe('WebSub Link headers from nginx', () => {
  it('names the hubs and the feed itself on RSS and Atom, with or without the final slash, and nothing else on other documents', async () => {
    const hubs = HUBS.map((hub) => `<${hub}>; rel="hub"`).join(', ');
    for (const feed of ['rss', 'atom']) {
      for (const path of [`/clips/alice/${feed}/`, `/clips/alice/${feed}`]) {
        const answer = await http(port, path);
        expect(answer.status, path).toBe(200);
        expect(answer.headers.link, path).toBe(`${hubs}, <https://videos.example.org/clips/alice/${feed}/>; rel="self"`);
      }
    }
    const foaf = await http(port, '/clips/alice/foaf/');
    expect(foaf.status).toBe(200);
    expect(foaf.headers.link).toBeUndefined();
  });
});
