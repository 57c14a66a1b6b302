import { describe, expect, it } from 'vitest';
import xxhash from 'xxhash-wasm';
import { documentHash, documentHasher } from '../../src/render/document-hash.js';

/** The state's document hash is XXH64 (seed 0), as xxHash's reference implementation gives it. */
describe('document hash', () => {
  it('is XXH64 of the bytes, big-endian', () => {
    // Reference values of XXH64 with seed 0 (xxHash's own test vectors).
    expect(documentHash(Buffer.alloc(0)).toString('hex')).toBe('ef46db3751d8e999');
    expect(documentHash(Buffer.from('a')).toString('hex')).toBe('d24ec4f1a98c6e5b');
    expect(documentHash(Buffer.from('abc')).toString('hex')).toBe('44bc2cf5ad770999');
  });

  it('reads only the bytes of a view into a larger buffer, and keeps leading zeros', () => {
    const scratch = Buffer.from('xxabcxx');
    const view = scratch.subarray(2, 5);
    expect(documentHash(view).toString('hex')).toBe('44bc2cf5ad770999');
    // Leading zeros kept: a hash below 2^56 is still 8 bytes.
    const bodies = Array.from({ length: 2000 }, (_, i) => Buffer.from(`document ${i}`));
    for (const body of bodies) expect(documentHash(body)).toHaveLength(8);
    expect(bodies.some((body) => documentHash(body)[0] === 0)).toBe(true);
  });

  it('hashes a large document in pieces to what XXH64 gives of it whole', async () => {
    const { h64Raw } = await xxhash();
    for (const size of [256 * 1024, 256 * 1024 + 1, 3_000_007]) {
      const body = Buffer.alloc(size);
      for (let i = 0; i < size; i++) body[i] = (i * 7919) % 251;
      expect(documentHash(body).toString('hex'), `${size} bytes`).toBe(h64Raw(body).toString(16).padStart(16, '0'));
    }
  });

  it('gives the same hash of bytes handed over piece by piece, whatever the pieces', () => {
    const body = Buffer.alloc(1_000_003);
    for (let i = 0; i < body.length; i++) body[i] = (i * 31) % 253;
    for (const piece of [1, 4096, 300_001, 2 ** 20]) {
      const hasher = documentHasher();
      for (let at = 0; at < body.length; at += piece) hasher.update(body.subarray(at, at + piece));
      expect(hasher.digest().equals(documentHash(body)), `pieces of ${piece}`).toBe(true);
    }
    expect(documentHasher().digest().toString('hex')).toBe('ef46db3751d8e999');
  });
});
