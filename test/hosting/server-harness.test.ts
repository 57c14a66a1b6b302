import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { freePort } from '../helpers/http.js';
import { nginxMainConfig, startNginx } from '../helpers/nginx.js';
import { cleanUpAfterTest, useTempDir } from '../helpers/temp-dir.js';

/**
 * The harness the nginx and Apache tests start their servers with. A port picked free can be
 * another test's by the time the server binds it; the server then exits, and a harness that took
 * any answer on the port as the server's would test the other process instead. It waits for the
 * server's pid file too, written once its ports are bound.
 */

describe('the server harness', () => {
  it("fails a server's start on a port another process holds, naming the cause, instead of testing that process", async () => {
    const port = await freePort();
    const other = createServer((_, res) => res.writeHead(403).end('not nginx'));
    await new Promise<void>((resolve) => other.listen(port, '127.0.0.1', () => resolve()));
    cleanUpAfterTest(() => other.close());
    const prefix = useTempDir('vidfeeds-harness-');
    const started = startNginx(prefix, nginxMainConfig(prefix, `server { listen 127.0.0.1:${port}; root ${prefix}; }`), [port]);
    await expect(started).rejects.toThrow(/Address already in use/);
  });
});
