import { onLockReleased } from '../lock/lock.js';
import { exitCodeOfSignal, type StopSignal } from './command-runner.js';
import { boundHeapGrowth } from './heap-growth.js';
import { main } from './main.js';

/**
 * The process `vidfeeds watch --deploy` runs its deploys in (src/cli/watch-deploy.ts): started
 * with the deploy's arguments, it runs `vidfeeds deploy` with them each time the watch sends
 * `deploy`, and answers with the exit code; it also says when the deploy releases the build lock
 * (an incremental one does before its uploads), so that a build waiting for it starts at once. One process for all of them, so a deploy of a few
 * objects costs its requests, not the start of Node and the loading of the AWS SDK; still a
 * process of its own, so a deploy that fails or is killed never takes the watch with it.
 *
 * A deploy stopped by a signal ends the process with its exit code, as `vidfeeds deploy` would; a
 * signal between deploys, or a second one during a deploy, ends it at once (through `exit`, so a
 * `--cpu-prof` profile is written). When the watch goes away, the deploy under way finishes (it
 * holds the lock and owes notifications) and the process ends.
 */

// A process of its own: the heap's bound set for the watch is not inherited (heap-growth.ts).
boundHeapGrowth();
const args = process.argv.slice(2);
let deploying = false;
let orphaned = false;
/** The signal heard during the deploy under way: the process ends with it. */
let heard: StopSignal | null = null;

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, (name: StopSignal) => {
    // The first one during a deploy is the deploy's to hear too (command-runner.ts): it stops, then this process.
    if (deploying && heard === null) {
      heard = name;
      return;
    }
    process.exit(exitCodeOfSignal(name));
  });
}

onLockReleased(() => {
  // Once the watch has gone, there is no one to tell (and sending would throw).
  if (process.connected) process.send!({ treeReleased: true });
});

process.on('message', (message) => {
  if (message !== 'deploy' || deploying) return;
  deploying = true;
  void main([process.argv[0]!, 'vidfeeds', 'deploy', ...args]).then((code) => {
    deploying = false;
    if (heard !== null || orphaned || !process.connected) process.exit(code);
    process.send!({ code });
  });
});

process.on('disconnect', () => {
  orphaned = true;
  if (!deploying) process.exit(0);
});
