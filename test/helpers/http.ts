import { request as httpRequest } from 'node:http';
import { gunzipSync } from 'node:zlib';

/**
 * A small HTTP client for tests that sends the request target exactly as given (fetch and URL
 * would normalise `..`, `%2e` and `//` away before the server sees them). Loopback only.
 */

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The body, gunzipped when it came compressed (a HEAD answer has none to gunzip). */
  text: string;
}

export function http(
  port: number,
  target: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer; host?: string } = {},
): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: options.host ?? '127.0.0.1',
        port,
        path: target,
        method: options.method ?? 'GET',
        // A user agent no rate limit counts as automated, unless a test sends its own.
        headers: { Connection: 'close', 'User-Agent': 'vidfeeds-tests', ...options.headers },
        timeout: 20_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          // A throw here would never settle the promise: the test would hang to its timeout.
          let text: string;
          try {
            const compressed = res.headers['content-encoding'] === 'gzip' && options.method !== 'HEAD';
            text = (compressed ? gunzipSync(body) : body).toString('utf8');
          } catch (error) {
            reject(new Error(`${target}: status ${res.statusCode}, Content-Encoding gzip, ${body.length} bytes that do not gunzip (${String(error)}); headers ${JSON.stringify(res.headers)}`));
            return;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`request ${target} timed out`)));
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

/** A TCP port free on the loopback address right now (the bench's, which its servers use too). */
export { freePort } from '../../src/bench/free-port.js';

/** Waits until something accepts HTTP on the port (bounded). */
export async function waitForHttp(port: number, path = '/', deadlineMs = 15_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      await http(port, path);
      return;
    } catch (error) {
      if (Date.now() > until) throw new Error(`nothing answers on 127.0.0.1:${port}: ${(error as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
