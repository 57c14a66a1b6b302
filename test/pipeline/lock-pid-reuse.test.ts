import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * A build killed with SIGKILL leaves its lock, and its pid is given at once to another process
 * (a container restarted, a busy host). The next build must see that the pid's process is not the
 * holder and run. The pid is really reused: in a PID namespace of its own (util-linux's unshare;
 * a user namespace makes it possible without root), the kernel's next pid is set to the killed
 * build's (/proc/sys/kernel/ns_last_pid, as CRIU restores processes) before a `sleep` starts.
 */

/** The unshare command line that gives a shell a PID namespace and a /proc of its own, or why there is none. */
function pidNamespace(): string[] {
  const user = process.getuid?.() === 0 ? [] : ['--user', '--map-root-user'];
  return ['unshare', ...user, '--pid', '--fork', '--mount-proc'];
}

const SCRIPT = String.raw`
set -u
node=$1 bin=$2 db=$3 out=$4 lock=$5
"$node" "$bin" build --db "$db" --out "$out" --quiet & build=$!
while [ ! -e "$lock" ]; do sleep 0.01; done
kill -STOP "$build"
grep -q "\"pid\":$build," "$lock" && echo "held-by=$build"
kill -KILL "$build"
wait "$build"
# The next process started in this namespace gets the killed build's pid.
echo $((build - 1)) > /proc/sys/kernel/ns_last_pid
sleep 60 & other=$!
echo "killed=$build"; echo "reused=$other"
"$node" "$bin" build --db "$db" --out "$out" --quiet
echo "next-build-exit=$?"
kill "$other"
`;

describe('a killed build whose pid is reused at once', () => {
  it('leaves a lock the next build takes over: the process with its pid started at another tick', () => {
    const { dir } = tempDir('vidfeeds-pid-reuse-');
    const db = join(dir, 'site.sqlite');
    // Large enough that the build still holds the lock when it is stopped.
    expect(cli(['demo', '--db', db, '--users', '300']).code).toBe(0);
    const out = join(dir, 'out');
    const lock = join(dir, '.vidfeeds', 'out.lock');
    const [command, ...args] = pidNamespace();
    const run = spawnSync(command!, [...args, 'sh', '-c', SCRIPT, 'sh', process.execPath, BIN, db, out, lock], { encoding: 'utf8', timeout: 120_000 });
    expect(run.error).toBeUndefined();
    const said = (key: string) => new RegExp(`^${key}=(\\d+)$`, 'm').exec(run.stdout)?.[1];
    // The build held the lock when it was killed, and the pid really went to another process.
    expect(said('held-by'), run.stdout + run.stderr).toBe(said('killed'));
    expect(said('reused')).toBe(said('killed'));
    expect(run.stderr).toMatch(/took over the lock of a build that is gone \("vidfeeds build", pid (\d+) .*\): process \1 .* another process has its pid/);
    expect(said('next-build-exit'), run.stderr).toBe('0');
    expect(existsSync(lock)).toBe(false);
  }, 180_000);
});
