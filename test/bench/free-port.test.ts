import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort, lowPorts } from '../../src/bench/free-port.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The ports the tests' servers get: below the kernel's ephemeral range where it can be read, so
 * that a client connection of another test (whose local port comes from that range) cannot take
 * one between `freePort` and the server's bind.
 */
describe('freePort', () => {
  it('reads the ports below the ephemeral range, and gives up on a range it cannot use', () => {
    const { dir } = tempDir('vidfeeds-ports-');
    const file = join(dir, 'range');
    writeFileSync(file, '32768\t60999\n');
    expect(lowPorts(file)).toEqual({ from: 10_000, to: 32_767 });
    writeFileSync(file, '1024\t65535\n');
    expect(lowPorts(file)).toBeNull();
    writeFileSync(file, 'nonsense');
    expect(lowPorts(file)).toBeNull();
    expect(lowPorts(join(dir, 'missing'))).toBeNull();
  });

  it('gives a port a server can listen on, outside the ephemeral range when the kernel names it', async () => {
    const range = lowPorts();
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      if (range !== null) {
        expect(port).toBeGreaterThanOrEqual(range.from);
        expect(port).toBeLessThanOrEqual(range.to);
      }
      const server = createServer();
      await new Promise<void>((listening, failed) => {
        server.once('error', failed);
        server.listen(port, '127.0.0.1', listening);
      });
      await new Promise((closed) => server.close(closed));
    }
  });

  it('passes over a port that is taken, and lets the kernel pick when every port it may draw is', async () => {
    // Two neighbouring ports, the upper one free.
    let port = 0;
    for (let tries = 0; tries < 20 && port === 0; tries++) {
      const low = await freePort();
      if ((await freePort({ from: low + 1, to: low + 1 })) === low + 1) port = low;
    }
    expect(port, 'two free neighbouring ports').not.toBe(0);
    const taken = createServer();
    await new Promise<void>((listening) => taken.listen(port, '127.0.0.1', listening));
    try {
      expect(await freePort({ from: port, to: port })).not.toBe(port);
      expect(await freePort({ from: port, to: port + 1 })).toBe(port + 1);
    } finally {
      await new Promise((closed) => taken.close(closed));
    }
  });
});
