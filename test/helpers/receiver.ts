import { createServer, type Server } from 'node:http';

/** A request the receiver got. */
export interface Received {
  method: string;
  path: string;
  contentType: string;
  body: string;
}

/**
 * A local HTTP endpoint standing in for WebSub hubs and an IndexNow endpoint: records every
 * request, and answers each path with the statuses queued for it (then 202 for a hub, 200 else).
 */
export interface Receiver {
  url: string;
  received: Received[];
  /** The next answers for a path, in order (e.g. [503] to make the first try fail; 0 never answers). */
  answer(path: string, statuses: number[]): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const queued = new Map<string, number[]>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      received.push({ method: req.method ?? '', path, contentType: req.headers['content-type'] ?? '', body });
      const status = queued.get(path)?.shift() ?? (path.includes('hub') ? 202 : 200);
      if (status === 0) return;
      res.writeHead(status, status === 503 ? { 'retry-after': '0' } : {});
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    answer: (path, statuses) => queued.set(path, [...statuses]),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A WebSub publish request, checked against the form the hubs take: the feeds it names. */
export function websubFeeds(request: Received): string[] {
  if (request.method !== 'POST') throw new Error(`a publish request is a POST, not ${request.method}`);
  if (request.contentType.split(';')[0]!.trim() !== 'application/x-www-form-urlencoded') throw new Error(`a publish request is form-encoded, not ${request.contentType}`);
  const form = new URLSearchParams(request.body);
  if (form.getAll('hub.mode').join() !== 'publish') throw new Error(`hub.mode must be publish once: ${request.body}`);
  const urls = form.getAll('hub.url');
  if (urls.length === 0) throw new Error('no hub.url');
  for (const url of urls) new URL(url);
  return urls;
}

/** An IndexNow submission, checked against the protocol's JSON body: its URLs. */
export function indexNowUrls(request: Received, expected: { host: string; key: string; keyLocation: string }): string[] {
  if (request.method !== 'POST') throw new Error(`an IndexNow submission is a POST, not ${request.method}`);
  if (!/^application\/json;\s*charset=utf-8$/i.test(request.contentType)) throw new Error(`IndexNow wants application/json; charset=utf-8, not ${request.contentType}`);
  const body = JSON.parse(request.body) as { host: string; key: string; keyLocation: string; urlList: string[] };
  if (Object.keys(body).sort().join() !== 'host,key,keyLocation,urlList') throw new Error(`unexpected fields: ${Object.keys(body).join()}`);
  if (body.host !== expected.host || body.key !== expected.key || body.keyLocation !== expected.keyLocation) throw new Error(`wrong host, key or keyLocation: ${request.body.slice(0, 300)}`);
  if (!/^[A-Za-z0-9-]{8,128}$/.test(body.key)) throw new Error('the key must be 8 to 128 letters, digits and dashes');
  if (body.urlList.length === 0 || body.urlList.length > 10_000) throw new Error(`urlList holds ${body.urlList.length} URLs`);
  const keyDir = body.keyLocation.slice(0, body.keyLocation.lastIndexOf('/') + 1);
  for (const url of body.urlList) {
    if (new URL(url).host !== body.host) throw new Error(`${url} is not on ${body.host}`);
    if (!url.startsWith(keyDir)) throw new Error(`${url} is outside the key file's folder ${keyDir}`);
  }
  return body.urlList;
}
