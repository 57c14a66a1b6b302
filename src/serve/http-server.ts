import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { RECOMMENDATION_POST_MAX_BYTES } from '../hosting/routes.js';
import { textResponse, type ServeResponse } from './responses.js';
import type { SiteServer } from './site-server.js';

/**
 * node:http around the server core: reads a request body up to the POST limit (413 past it),
 * hands the request to `SiteServer.respond`, writes the answer.
 */

export interface RunningServer {
  server: Server;
  /** The address it listens on, e.g. `http://127.0.0.1:8080`. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** One request as the access log tells it. */
export interface AccessEntry {
  /** The client's address as the server determined it (SiteServer.clientAddress). */
  client: string;
  method: string;
  /** The request target as sent, query included. */
  path: string;
  status: number;
  /** Bytes of the body sent (0 for HEAD). */
  bytes: number;
  /** From the request's arrival to the last byte handed to the socket, in milliseconds. */
  ms: number;
}

export interface ListenOptions {
  host: string;
  port: number;
  /** Each request once answered; none when absent (the access log turned off). */
  access?: (entry: AccessEntry) => void;
  /** A request the core failed on (answered 500), with the error. */
  error?: (message: string) => void;
}

function send(res: ServerResponse, response: ServeResponse): void {
  res.writeHead(response.status, response.headers);
  res.end(response.body);
}

/**
 * Past this much of an oversized body the 413 goes out at once and the connection is closed
 * unread: a bound on what a client can make the server read for nothing.
 */
const OVERSIZED_BODY_READ_MAX = 1024 * 1024;

/**
 * The body, or 'too-large' past `limit`. An oversized body is still read to its end (up to
 * OVERSIZED_BODY_READ_MAX) before the answer: the 413 closes the connection, and a proxy still
 * sending the body into a closed connection (Apache's mod_proxy, nginx) answers its client 502
 * instead of the 413.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const giveUp = () => {
      req.removeAllListeners('data');
      req.removeAllListeners('end');
      req.resume();
      resolve('too-large');
    };
    const declared = Number(req.headers['content-length'] ?? '0');
    if (Number.isFinite(declared) && declared > OVERSIZED_BODY_READ_MAX) return giveUp();
    let chunks: Buffer[] | null = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > OVERSIZED_BODY_READ_MAX) return giveUp();
      if (size > limit) chunks = null;
      chunks?.push(chunk);
    });
    req.on('end', () => resolve(chunks === null ? 'too-large' : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** A whole HTTP/1.1 answer as bytes, for a socket that has no response object; the connection then closes. */
function rawAnswer(response: ServeResponse): Buffer {
  const headers = { ...response.headers, 'Content-Length': String(response.body.length), Connection: 'close' };
  const head = `HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), response.body]);
}

export function listen(core: SiteServer, options: ListenOptions): Promise<RunningServer> {
  const server = createServer((req, res) => {
    const started = process.hrtime.bigint();
    const method = req.method ?? 'GET';
    const target = req.url ?? '/';
    const done = (response: ServeResponse) => {
      if (options.access !== undefined) {
        const access = options.access;
        const client = core.clientAddress({ remoteAddress: req.socket.remoteAddress, headers: req.headers });
        const bytes = method === 'HEAD' ? 0 : response.body.length;
        res.once('finish', () => access({ client, method, path: target, status: response.status, bytes, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
      }
      send(res, response);
    };
    const hasBody = method === 'POST' || method === 'PUT' || method === 'PATCH';
    const body = hasBody ? readBody(req, RECOMMENDATION_POST_MAX_BYTES) : Promise.resolve(Buffer.alloc(0));
    body.then(
      (bytes) => {
        if (bytes === 'too-large') {
          res.setHeader('Connection', 'close');
          done(textResponse(413, `the body is larger than ${RECOMMENDATION_POST_MAX_BYTES} bytes`));
          return;
        }
        core.respond({ method, target, headers: req.headers, body: bytes, remoteAddress: req.socket.remoteAddress }).then(done, (error: unknown) => {
          options.error?.(`${method} ${target}: ${(error as Error).stack ?? String(error)}`);
          done(textResponse(500, 'internal error'));
        });
      },
      () => res.destroy(),
    );
  });
  // What Node answers itself (a request it cannot parse, headers too large, a CONNECT) is
  // written here instead, so that every answer carries nosniff and a body that says why.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    socket.end(rawAnswer(textResponse(status, status === 400 ? 'not an HTTP request this server can read' : (STATUS_CODES[status] ?? '').toLowerCase())));
  });
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.end(rawAnswer(textResponse(405, 'CONNECT is not allowed here', { Allow: 'GET, HEAD' })));
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      const address = server.address() as AddressInfo;
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve({
        server,
        port: address.port,
        url: `http://${host}:${address.port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
