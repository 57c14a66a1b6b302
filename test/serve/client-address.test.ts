import { describe, expect, it } from 'vitest';
import { ClientAddresses } from '../../src/serve/client-address.js';

/** How `vidfeeds serve` decides whose POST it is counting (docs/serve.md, "Behind nginx"). */
describe('ClientAddresses', () => {
  const behindNginx = new ClientAddresses(['127.0.0.1', '::1', '10.0.0.0/8', 'fd00::/8']);

  it('takes the peer itself when it is not a trusted proxy, whatever the headers say', () => {
    expect(behindNginx.of('198.51.100.7', '203.0.113.1')).toBe('198.51.100.7');
    expect(behindNginx.of('2001:DB8::5', '203.0.113.1')).toBe('2001:db8::5');
    expect(behindNginx.of('::ffff:198.51.100.7', undefined)).toBe('198.51.100.7');
    expect(new ClientAddresses([]).of('127.0.0.1', '203.0.113.1')).toBe('127.0.0.1');
  });

  it('reads X-Forwarded-For from the right, past trusted proxies only', () => {
    expect(behindNginx.of('127.0.0.1', '203.0.113.1')).toBe('203.0.113.1');
    expect(behindNginx.of('::1', 'forged, 203.0.113.1')).toBe('203.0.113.1');
    expect(behindNginx.of('127.0.0.1', '203.0.113.9, 203.0.113.1, 10.2.3.4')).toBe('203.0.113.1');
    expect(behindNginx.of('127.0.0.1', ['203.0.113.1', 'fd00::1'])).toBe('203.0.113.1');
    expect(behindNginx.of('127.0.0.1', '2001:db8::1')).toBe('2001:db8::1');
    // Only trusted hops: the outermost one is the client as far as anyone can tell.
    expect(behindNginx.of('127.0.0.1', '10.0.0.1')).toBe('10.0.0.1');
    expect(behindNginx.of('127.0.0.1', undefined)).toBe('127.0.0.1');
    expect(behindNginx.of('127.0.0.1', '')).toBe('127.0.0.1');
  });

  it('refuses a hop from a trusted proxy that is not an address', () => {
    expect(behindNginx.of('127.0.0.1', 'unknown')).toBeNull();
    expect(behindNginx.of('127.0.0.1', '203.0.113.1, 10.0.0.1:8080')).toBeNull();
  });
});
