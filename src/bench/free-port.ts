import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * A TCP port free on loopback now, for a server the bench or a test starts. Another process may
 * still take it before the server binds it; to make that rare, the port is drawn at random from
 * below the kernel's range of ephemeral ports, where neither a connection's local port nor a
 * `listen(0)` elsewhere lands (a port of that range, handed back and closed, is the next one many
 * an outgoing connection takes). Where the range cannot be read, or no port drawn from `range` is
 * free, the kernel picks.
 */
export async function freePort(range = lowPorts()): Promise<number> {
  if (range !== null) {
    for (let tries = 0; tries < 50; tries++) {
      const port = range.from + Math.floor(Math.random() * (range.to - range.from + 1));
      if (await listens(port)) return port;
    }
  }
  return listenAny();
}

/** The ports below the ephemeral range, from 10,000 up (the well-known services sit below), or null. */
export function lowPorts(file = '/proc/sys/net/ipv4/ip_local_port_range'): { from: number; to: number } | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  const first = Number(text.trim().split(/\s+/)[0]);
  return Number.isInteger(first) && first > 11_000 ? { from: 10_000, to: first - 1 } : null;
}

/** Whether a server could listen on `port` of 127.0.0.1 just now. */
function listens(port: number): Promise<boolean> {
  return new Promise((answer) => {
    const server = createServer();
    server.once('error', () => answer(false));
    server.listen(port, '127.0.0.1', () => server.close(() => answer(true)));
  });
}

function listenAny(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}
