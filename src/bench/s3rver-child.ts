/**
 * The deploy bench's local S3-compatible store: s3rver (a development dependency) on a free
 * loopback port, storing in the folder given; prints `{"port": N}` once it listens and stops on
 * SIGTERM. Run with --openssl-legacy-provider: s3rver's ListObjectsV2 continuation tokens (past
 * 1,000 keys) use DES, which Node's OpenSSL 3 offers only there.
 * Usage: node --openssl-legacy-provider dist/bench/s3rver-child.js <folder> <bucket>
 */
const { default: S3rver } = await import('s3rver');
const [directory = '', bucket = 'site'] = process.argv.slice(2);
const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: [{ name: bucket }] });
const { port } = await server.run();
process.stdout.write(`${JSON.stringify({ port })}\n`);
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
