import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listen } from '../../src/serve/http-server.js';
import { textResponse } from '../../src/serve/responses.js';
import type { SiteServer } from '../../src/serve/site-server.js';
import { cleanUpAfterTest } from '../helpers/temp-dir.js';

/**
 * What the HTTP layer answers before the core sees a request (bytes that are not HTTP, headers
 * over Node's limit, a CONNECT): a whole answer with nosniff and a reason, as every other answer
 * (docs/serve.md), read from a raw socket, not through an HTTP client that would refuse the bytes.
 */

async function port(): Promise<number> {
  const core = { respond: async () => textResponse(200, 'ok') } as unknown as SiteServer;
  const running = await listen(core, { host: '127.0.0.1', port: 0 });
  cleanUpAfterTest(() => running.close());
  return running.port;
}

/** Sends `bytes` and reads until the server closes. */
function exchange(to: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(to, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });
}

/** The status and the headers of an answer, and its body checked against Content-Length. */
function parse(answer: string): { status: number; headers: Map<string, string>; body: string } {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = new Map(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  expect(Number(headers.get('content-length'))).toBe(Buffer.byteLength(body, 'latin1'));
  return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1]), headers, body };
}

describe('answers Node would make itself', () => {
  it.each([
    ['bytes that are not HTTP', 400, 'HELLO\r\n\r\n'],
    ['a request line with a space in its target', 400, 'GET /a b c HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['headers over the limit', 431, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
    ['CONNECT', 405, 'CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n'],
  ])('%s: %i with nosniff, a plain-text reason and a closed connection', async (_what, status, request) => {
    const answer = parse(await exchange(await port(), request));
    expect(answer.status).toBe(status);
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(answer.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(answer.headers.get('connection')).toBe('close');
    expect(answer.body.trim()).not.toBe('');
    if (status === 405) expect(answer.headers.get('allow')).toBe('GET, HEAD');
  });
});
