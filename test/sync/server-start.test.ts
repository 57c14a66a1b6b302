import { closeSync, openSync } from 'node:fs';
import { connect as connectTo, createServer } from 'node:net';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../helpers/http.js';
import { startOnFreePort } from '../helpers/server-dir.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The start of the database servers the sync tests run (test/helpers/server-dir.ts): a port taken
 * between `freePort` and the server's bind is tried again elsewhere, and a server that exits fails
 * the start at once with its log. The server here is a small Node program that listens as MariaDB
 * and PostgreSQL do and writes their kind of message to its log when it cannot.
 */
const LISTENER = `
const net = require('node:net');
const server = net.createServer((socket) => socket.end('hello'));
server.on('error', (error) => { console.error('could not bind 127.0.0.1: ' + error.message); process.exit(1); });
server.listen(Number(process.argv[1]), '127.0.0.1');
`;

function listener(port: number, log: string, exitAtOnce = false) {
  const fd = openSync(log, 'a');
  try {
    return spawn(process.execPath, ['-e', exitAtOnce ? "console.error('FATAL: no such data directory'); process.exit(3)" : LISTENER, String(port)], { stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
}

/** Connects and checks that the server is the one started (as the helpers check the data directory): another answers otherwise. */
const connect = (port: number) =>
  new Promise<string>((resolve, reject) => {
    const socket = connectTo(port, '127.0.0.1');
    socket.once('data', (data: Buffer) => {
      socket.destroy();
      if (data.toString() === 'hello') resolve('hello');
      else reject(new Error(`another server answers on port ${port}`));
    });
    socket.once('error', reject);
  });

describe('starting a test server on a free port', () => {
  it('starts it again on another port when the one it was given is taken before it binds', async () => {
    const log = join(tempDir('vidfeeds-start-').dir, 'server.log');
    // Another test's server, which took the port.
    const taken = createServer((socket) => socket.end('other'));
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const takenPort = (taken.address() as { port: number }).port;
    const ports = [takenPort];
    const children: ReturnType<typeof listener>[] = [];
    try {
      const started = await startOnFreePort('the listener', async () => ports.shift() ?? freePort(), (port) => children[children.push(listener(port, log)) - 1]!, connect, log);
      expect(started.port).not.toBe(takenPort);
      expect(started.connection).toBe('hello');
      expect(children).toHaveLength(2);
    } finally {
      for (const child of children) child.kill();
      taken.close();
    }
  });

  it('fails at once, with the end of its log, when the server exits for another reason', async () => {
    const log = join(tempDir('vidfeeds-start-').dir, 'server.log');
    const began = Date.now();
    await expect(startOnFreePort('the listener', freePort, (port) => listener(port, log, true), connect, log)).rejects.toThrow(
      /the listener did not start on port \d+: it exited \(code 3\); the end of .*server\.log:\nFATAL: no such data directory/,
    );
    // Not the minute a server that never answers is given.
    expect(Date.now() - began).toBeLessThan(20_000);
  });
});
