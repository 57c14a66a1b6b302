import { BlockList, isIP } from 'node:net';

/**
 * The address a request comes from, as the per-client limits of the recommendation POST count
 * it. Behind nginx every request arrives from nginx's address, so the client's is read from
 * X-Forwarded-For, but only when the connection comes from a trusted proxy (configuration
 * `recommendationSubmit.trustedProxies`); anyone else could write any address there. The header
 * is read from the right: each trusted proxy appends the address it received from
 * (`$proxy_add_x_forwarded_for`), so the first address from the right that is not a trusted
 * proxy is the one the outermost of them saw. docs/serve.md says how to set nginx up for it.
 */
export class ClientAddresses {
  private readonly trusted = new BlockList();

  constructor(trustedProxies: readonly string[]) {
    for (const entry of trustedProxies) {
      const [address = '', bits] = entry.split('/');
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (bits === undefined) this.trusted.addAddress(address, family);
      else this.trusted.addSubnet(address, Number(bits), family);
    }
  }

  /**
   * The client's address, or null when a trusted proxy sent an X-Forwarded-For entry that is not
   * an address (the request is refused: counting it under any address would be a guess).
   */
  of(peer: string, forwardedFor: string | string[] | undefined): string | null {
    let address = plain(peer);
    if (!this.isTrusted(address) || forwardedFor === undefined) return address;
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor)
      .split(',')
      .map((hop) => hop.trim())
      .filter((hop) => hop !== '');
    while (hops.length > 0 && this.isTrusted(address)) {
      const hop = plain(hops.pop()!);
      if (isIP(hop) === 0) return null;
      address = hop;
    }
    return address;
  }

  private isTrusted(address: string): boolean {
    const family = isIP(address);
    return family !== 0 && this.trusted.check(address, family === 6 ? 'ipv6' : 'ipv4');
  }
}

/** `::ffff:192.0.2.1` (an IPv4 client on a dual-stack socket) as `192.0.2.1`; IPv6 in lower case. */
function plain(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address.toLowerCase();
}
