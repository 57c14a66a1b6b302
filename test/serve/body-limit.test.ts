import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { RECOMMENDATION_POST_MAX_BYTES } from '../../src/hosting/routes.js';
import { listen } from '../../src/serve/http-server.js';
import { textResponse } from '../../src/serve/responses.js';
import type { SiteServer } from '../../src/serve/site-server.js';
import { cleanUpAfterTest } from '../helpers/temp-dir.js';

/**
 * The POST body limit as a proxy meets it. Apache's mod_proxy sends the body on while it waits for
 * the answer; a server that answers 413 and closes before the body is in makes the proxy's next
 * write fail, and the proxy answers its client 502. So the 413 waits for the body, up to a bound.
 * A raw socket shows when the answer comes.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A core that answers every request it is handed 202 with the length of the body it got. */
async function server(): Promise<{ port: number; bodies: number[] }> {
  const bodies: number[] = [];
  const core = {
    respond: async (request: { body: Buffer }) => {
      bodies.push(request.body.length);
      return textResponse(202, 'accepted');
    },
  } as unknown as SiteServer;
  const running = await listen(core, { host: '127.0.0.1', port: 0 });
  cleanUpAfterTest(() => running.close());
  return { port: running.port, bodies };
}

function client(port: number): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.once('error', reject);
    socket.once('connect', () => resolve({ socket, received: () => text, closed }));
  });
}

function post(length: number): string {
  return `POST /bob/openrecommender/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${length}\r\n\r\n`;
}

describe('the POST body limit', () => {
  it('answers 413 once the oversized body is in, not while the client still sends it', async () => {
    const { port, bodies } = await server();
    const length = RECOMMENDATION_POST_MAX_BYTES * 4;
    const { socket, received, closed } = await client(port);
    socket.write(post(length) + 'x'.repeat(length / 2));
    await sleep(300);
    expect(received()).toBe('');
    socket.write('x'.repeat(length / 2));
    await closed;
    expect(received()).toMatch(/^HTTP\/1\.1 413 /);
    expect(bodies).toEqual([]);
  });

  it('answers at once, unread, when the declared body is past what it reads for nothing', async () => {
    const { port } = await server();
    const { socket, received } = await client(port);
    socket.write(post(64 * 1024 * 1024));
    for (let waited = 0; received() === '' && waited < 5000; waited += 20) await sleep(20);
    expect(received()).toMatch(/^HTTP\/1\.1 413 /);
    socket.destroy();
  });

  it('hands a body within the limit to the core whole', async () => {
    const { port, bodies } = await server();
    const { socket, received, closed } = await client(port);
    socket.end(post(RECOMMENDATION_POST_MAX_BYTES).replace('HTTP/1.1\r\n', 'HTTP/1.1\r\nConnection: close\r\n') + 'x'.repeat(RECOMMENDATION_POST_MAX_BYTES));
    await closed;
    expect(received()).toMatch(/^HTTP\/1\.1 202 /);
    expect(bodies).toEqual([RECOMMENDATION_POST_MAX_BYTES]);
  });
});
