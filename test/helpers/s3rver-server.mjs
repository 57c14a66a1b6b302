// Runs s3rver on a free loopback port in the folder given, prints {"port": N} once it listens, and
// stops on SIGTERM. A process of its own because s3rver's continuation tokens (ListObjectsV2
// past 1,000 keys) use DES, which Node's OpenSSL 3 offers only with --openssl-legacy-provider.
import S3rver from 's3rver';

const [directory, bucket, verbose] = process.argv.slice(2);
const server = new S3rver({ port: 0, address: '127.0.0.1', silent: verbose !== '1', directory, configureBuckets: [{ name: bucket }] });
const { port } = await server.run();
process.stdout.write(`${JSON.stringify({ port })}\n`);
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
