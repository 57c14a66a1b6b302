import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from './free-port.js';

/**
 * A production object store for the tests and the deploy bench: Ceph's RADOS Gateway (Debian's
 * `radosgw`, Ceph 16.2) over a single-node cluster of one monitor and one OSD (in memory by
 * default: no block device, no root), started in a temporary folder on loopback ports, with one S3
 * user of fresh random keys.
 *
 * Ceph runs as the current user (it does not refuse root, and every file it writes is in the
 * temporary folder), without cephx and without a manager: a monitor, an OSD and the gateway are
 * all a gateway needs. Every daemon runs in the foreground as a child of the test process, so
 * `stop()`, the lifetime watchdog and the test process's exit reach each of them by its own pid.
 */

/** The programs a cluster needs, each with its Debian package. */
export const RADOSGW_PROGRAMS = {
  // monmaptool is ceph-base's, which ceph-mon depends on.
  monmaptool: 'ceph-mon',
  'ceph-mon': 'ceph-mon',
  'ceph-osd': 'ceph-osd',
  ceph: 'ceph-common',
  radosgw: 'radosgw',
  'radosgw-admin': 'ceph-common',
};

/** How long one start may take before it is abandoned (a start takes seconds; a loaded machine, more). */
const START_DEADLINE_MS = 90_000;

export type ObjectStore = 'memstore' | 'bluestore';

/** bluestore's sparse file when `blockBytes` is not given. */
export const DEFAULT_BLOCK_BYTES = 10 * 1024 ** 3;

export interface RadosgwOptions {
  /** The OSD's store: memstore (the default) or a file-backed bluestore for more than 1 GiB. */
  objectStore?: ObjectStore;
  /** bluestore's sparse file, in bytes (default 10 GiB): it holds the objects and their metadata, 0.5 to 0.8 MB a demo user (src/bench/deploy-bench.ts). */
  blockBytes?: number;
  /** The cluster is killed after this long, stopped or not (default 10 minutes). */
  lifetimeMs?: number;
}

export interface RunningRadosgw {
  /** `http://127.0.0.1:PORT`, path-style. */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The region to sign with: the gateway's default zonegroup accepts any, the SDK needs one. */
  region: string;
  /** The cluster's logs so far (monitor, OSD, gateway), for a failing test's message. */
  logs(): string;
  /** Stops every daemon (SIGTERM, then SIGKILL after 10 s) and removes the folder. */
  stop(): Promise<void>;
}

/** One daemon in the foreground: its process, a promise of its exit, what it printed. */
interface Daemon {
  name: string;
  child: ChildProcess;
  exited: Promise<void>;
  output(): string;
}

/**
 * Starts a daemon in the foreground. setpriv (util-linux, essential on Debian) has the kernel kill
 * it when the test process dies, even by SIGKILL, when no exit handler of ours can run.
 */
function startDaemon(name: string, program: string, args: string[]): Daemon {
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', program, ...args], { stdio: ['ignore', 'pipe', 'pipe'], cwd: tmpdir() });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { name, child, exited, output: () => output };
}

/** A daemon stopped while it was needed: a port taken in the meantime, most often. */
class DaemonExited extends Error {}

const running = (d: Daemon) => d.child.exitCode === null && d.child.signalCode === null;

/** Rejects as soon as the daemon exits, naming it and what it printed (for a race with a wait). */
function exitOf(daemon: Daemon, logs: () => string): Promise<never> {
  return daemon.exited.then(() => {
    throw new DaemonExited(`${daemon.name} exited (${daemon.child.exitCode ?? daemon.child.signalCode}): ${daemon.output()}\n${logs()}`);
  });
}

/** Runs a Ceph tool to its end (bounded); throws with its output when it fails. */
function tool(program: string, args: string[], timeoutMs = 60_000, signal?: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(program, args, { cwd: tmpdir(), timeout: timeoutMs, encoding: 'utf8', signal }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${program} ${args.join(' ')} failed: ${error.message}\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

/**
 * Runs a tool that needs the daemons; fails as soon as one of them exits, and then stops the tool
 * rather than leave it waiting for a cluster that is gone.
 */
async function toolWhileUp(daemons: readonly Daemon[], logs: () => string, program: string, args: string[], timeoutMs: number): Promise<void> {
  const abort = new AbortController();
  try {
    await Promise.race([tool(program, args, timeoutMs, abort.signal), ...daemons.map((d) => exitOf(d, logs))]);
  } finally {
    abort.abort();
  }
}

/**
 * The OSD's store. memstore holds every object in memory and starts in a moment; bluestore keeps
 * them in a sparse file of the folder, `blockBytes` long (its first start formats it: several
 * seconds), with a small cache and SSD settings, for more data than a test's.
 */
function objectStoreConf(store: ObjectStore, blockBytes = DEFAULT_BLOCK_BYTES): string {
  if (store === 'memstore') return 'osd objectstore = memstore\n# The capacity the OSD reports: writes stop when it is 95% full.\nmemstore device bytes = 1073741824\n';
  return [
    'osd objectstore = bluestore',
    'bluestore block create = true',
    `bluestore block size = ${blockBytes}`,
    'bluestore fsck on mount = false',
    'osd memory target = 536870912',
    'bluestore cache autotune = false',
    'bluestore cache size = 134217728',
    // A virtual disk often says it is rotational; taken at its word, BlueStore writes every small
    // object twice (through its database's log first, "deferred") and throttles as for a disk
    // arm. A production gateway's OSDs sit on SSDs: their settings.
    'bluestore debug enforce settings = ssd',
    '',
  ].join('\n');
}

/** The cluster's configuration: everything under `dir`, quiet logs, as few threads as serve a test. */
function cephConf(dir: string, fsid: string, monPort: number, storeConf: string): string {
  return `[global]
fsid = ${fsid}
mon host = v2:127.0.0.1:${monPort}
public addr = 127.0.0.1
ms bind msgr1 = false
ms bind ipv6 = false
# No cephx: nothing but this test's processes reach loopback ports it picked, and keyrings would
# add a step to every start. The gateway asks for a "secure" monitor connection by default, which
# needs cephx, so every client is told to accept "crc".
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
run dir = ${dir}/run
admin socket = ${dir}/run/$name.asok
log file = ${dir}/log/$name.log
crash dir = ${dir}/crash
# The monitor's cluster and audit logs go to /var/log/ceph otherwise.
mon cluster log to file = false
mon data = ${dir}/mon
osd data = ${dir}/osd
rgw data = ${dir}/rgw
# A shared disk that is mostly full must not stop the monitor.
mon data avail warn = 0
mon data avail crit = 0
# One OSD holds every placement group: one copy, few groups, no autoscaler (it needs a manager).
${storeConf}osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
# The monitor gathers changes for a second before it commits them by default, and every pool and
# OSD change of a start waits for a commit.
paxos propose interval = 0.01
paxos min wait = 0.001
osd op num shards = 1
osd op num threads per shard = 2
rgw thread pool size = 16
rgw enable gc threads = false
rgw enable lc threads = false
rgw enable quota threads = false
rgw dynamic resharding = false
# Without tcp_nodelay every answer with a body waits for the client's delayed ACK (about 40 ms).
rgw frontends = beast endpoint=127.0.0.1:0 tcp_nodelay=1
debug ms = 0
debug mon = 0
debug paxos = 0
debug osd = 0
debug rgw = 0
debug monc = 0
debug auth = 0
`;
}

/** The text of every log file of the cluster's folder (the tail of each). */
function readLogs(dir: string): string {
  const parts: string[] = [];
  for (const name of ['mon.a.log', 'osd.0.log', 'client.rgw.log']) {
    try {
      parts.push(`== ${name}\n${readFileSync(join(dir, 'log', name), 'utf8').slice(-4_000)}`);
    } catch {
      // not written yet
    }
  }
  return parts.join('\n');
}

/** Stops the daemons, the gateway first, and waits for each. */
async function stopDaemons(daemons: readonly Daemon[]): Promise<void> {
  for (const daemon of [...daemons].reverse()) {
    if (!running(daemon)) continue;
    daemon.child.kill('SIGTERM');
    const killer = setTimeout(() => running(daemon) && daemon.child.kill('SIGKILL'), 10_000);
    await daemon.exited;
    clearTimeout(killer);
  }
}

/**
 * Polls a signed ListBuckets with the user's keys until it succeeds (only this gateway knows them),
 * for as long as the gateway runs.
 */
async function waitForGateway(client: S3Client, rgw: Daemon, deadline: number): Promise<void> {
  for (;;) {
    try {
      await client.send(new ListBucketsCommand({}));
      return;
    } catch (error) {
      if (!running(rgw)) throw new DaemonExited(`radosgw exited: ${rgw.output()}`);
      if (Date.now() > deadline) throw new Error(`the gateway did not answer: ${(error as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * Starts the monitor and the OSD in fresh folders and creates the S3 user; resolves once the user
 * exists (radosgw-admin's write waits for the OSD to serve the pools it creates). The gateway's
 * port in the configuration is set by startGateway.
 */
async function startCluster(dir: string, storeConf: string, keys: { access: string; secret: string }, daemons: Daemon[], deadline: number): Promise<void> {
  for (const sub of ['run', 'log', 'mon', 'osd', 'rgw', 'crash']) {
    rmSync(join(dir, sub), { recursive: true, force: true });
    mkdirSync(join(dir, sub));
  }
  const fsid = randomUUID();
  const monPort = await freePort();
  const config = join(dir, 'ceph.conf');
  writeFileSync(config, cephConf(dir, fsid, monPort, storeConf));
  const c = ['-c', config];
  await tool('monmaptool', ['--create', '--clobber', '--fsid', fsid, '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, join(dir, 'monmap')]);
  await tool('ceph-mon', [...c, '-i', 'a', '--mkfs', '--monmap', join(dir, 'monmap')]);
  const mon = startDaemon('ceph-mon', 'ceph-mon', [...c, '-f', '-i', 'a']);
  daemons.push(mon);
  const logs = () => readLogs(dir);
  const left = () => Math.max(1_000, deadline - Date.now());
  const osdUuid = randomUUID();
  // `ceph` waits for the monitor to form its quorum; a monitor that could not bind exits instead.
  await toolWhileUp([mon], logs, 'ceph', [...c, '--connect-timeout', String(Math.ceil(left() / 1000)), 'osd', 'new', osdUuid], left());
  await tool('ceph-osd', [...c, '-i', '0', '--mkfs', '--osd-uuid', osdUuid]);
  const osd = startDaemon('ceph-osd', 'ceph-osd', [...c, '-f', '-i', '0']);
  daemons.push(osd);
  const user = ['user', 'create', '--uid', 'vidfeeds-test', '--display-name', 'vidfeeds tests', '--access-key', keys.access, '--secret-key', keys.secret];
  await toolWhileUp([mon, osd], logs, 'radosgw-admin', [...c, '-n', 'client.admin', ...user], left());
}

/**
 * Starts the gateway on a free port; a port some other process took in the meantime makes the
 * gateway exit, and it is started again on another (three tries).
 */
async function startGateway(dir: string, client: (port: number) => S3Client, daemons: Daemon[], deadline: number): Promise<number> {
  const config = join(dir, 'ceph.conf');
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const text = readFileSync(config, 'utf8').replace(/endpoint=127\.0\.0\.1:\d+/, `endpoint=127.0.0.1:${port}`);
    writeFileSync(config, text);
    const rgw = startDaemon('radosgw', 'radosgw', ['-c', config, '-f', '-n', 'client.rgw']);
    daemons.push(rgw);
    const s3 = client(port);
    try {
      await Promise.race([waitForGateway(s3, rgw, deadline), exitOf(rgw, () => readLogs(dir))]);
      return port;
    } catch (error) {
      if (!(error instanceof DaemonExited) || attempt === 3) throw error;
    } finally {
      s3.destroy();
    }
  }
}

/** Starts the cluster and its gateway; rejects with the daemons' logs when it cannot. */
export async function startRadosgw(options: RadosgwOptions = {}): Promise<RunningRadosgw> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const dir = mkdtempSync(join(tmpdir(), 'vidfeeds-ceph-'));
  const keys = { access: randomBytes(10).toString('hex').toUpperCase(), secret: randomBytes(20).toString('hex') };
  const region = 'us-east-1';
  const daemons: Daemon[] = [];
  const killAll = () => {
    for (const d of daemons) if (running(d)) d.child.kill('SIGKILL');
  };
  process.once('exit', killAll);
  // A test that hangs or a worker that dies without stopping it must not leave the cluster running.
  const watchdog = setTimeout(killAll, options.lifetimeMs ?? 600_000);
  watchdog.unref();
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      clearTimeout(watchdog);
      process.removeListener('exit', killAll);
      await stopDaemons(daemons);
      rmSync(dir, { recursive: true, force: true });
    })());
  const deadline = Date.now() + START_DEADLINE_MS;
  const client = (port: number) =>
    new S3Client({ endpoint: `http://127.0.0.1:${port}`, forcePathStyle: true, region, maxAttempts: 1, credentials: { accessKeyId: keys.access, secretAccessKey: keys.secret } });
  try {
    // A monitor whose port some other process took in the meantime exits: the cluster is made
    // again on another port (three tries).
    for (let attempt = 1; ; attempt++) {
      try {
        await startCluster(dir, objectStoreConf(options.objectStore ?? 'memstore', options.blockBytes), keys, daemons, deadline);
        break;
      } catch (error) {
        if (!(error instanceof DaemonExited) || attempt === 3) throw error;
        await stopDaemons(daemons.splice(0));
      }
    }
    const port = await startGateway(dir, client, daemons, deadline);
    return { endpoint: `http://127.0.0.1:${port}`, accessKeyId: keys.access, secretAccessKey: keys.secret, region, logs: () => readLogs(dir), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

