import { afterEach, describe, expect, it } from 'vitest';
import { exitCodeOfSignal, runCommand, waitSeconds, type StopSignal } from '../../src/cli/command-runner.js';
import { quietAwsSdkNodeNotice, readEnvironment } from '../../src/cli/environment.js';
import { EXIT, UsageError } from '../../src/cli/errors.js';
import { Logger } from '../../src/cli/logger.js';
import type { Console } from '../../src/cli/output.js';

/** A console whose stdout and stderr are kept, and the exit code the runner sets. */
function capture() {
  const out: string[] = [];
  const err: string[] = [];
  const io: Console = { out: (text) => out.push(text), log: new Logger((line) => err.push(line)), interactive: false };
  const exit: { code: number | null } = { code: null };
  return { io, out, err, exit, setExit: (code: number) => (exit.code = code) };
}

const signalListeners = () => process.listenerCount('SIGINT') + process.listenerCount('SIGTERM');

describe('the command runner', () => {
  const before = signalListeners();
  afterEach(() => expect(signalListeners()).toBe(before));

  it("sets the exit code from the action's ending and prints its report with --json only", async () => {
    for (const json of [true, false]) {
      const { io, out, exit, setExit } = capture();
      await runCommand({ name: 'check', json, io, setExit }, () => ({ exitCode: EXIT.failed, report: () => '{"report":1}' }));
      expect(exit.code).toBe(EXIT.failed);
      expect(out).toEqual(json ? ['{"report":1}'] : []);
    }
  });

  it('reports an error with --json as the error alone, then as the command asks once it has said so, and passes the error on', async () => {
    const { io, out, exit, setExit } = capture();
    const early = new UsageError('--only: unknown format atom2');
    await expect(runCommand({ name: 'build', json: true, io, setExit }, () => Promise.reject(early))).rejects.toBe(early);
    expect(JSON.parse(out[0]!)).toEqual({ report: 1, command: 'build', ok: false, exitCode: 2, error: '--only: unknown format atom2' });

    const late = new Error('disk full');
    await expect(
      runCommand({ name: 'build', json: true, io, setExit }, (run) => {
        run.reportErrorsAs((error, exitCode) => JSON.stringify({ exitCode, error: (error as Error).message, written: ['/a/'] }));
        throw late;
      }),
    ).rejects.toBe(late);
    expect(JSON.parse(out[1]!)).toEqual({ exitCode: 1, error: 'disk full', written: ['/a/'] });
    // Without --json nothing goes to stdout, and no exit code is set: main decides it from the error.
    await expect(runCommand({ name: 'build', io, setExit }, () => Promise.reject(late))).rejects.toBe(late);
    expect(out).toHaveLength(2);
    expect(exit.code).toBeNull();
  });

  it('hears the first signal: notes it, says so, aborts, resolves; then listens no more, so a second one ends the process', async () => {
    const { io, err, exit, setExit } = capture();
    const seen: StopSignal[] = [];
    await runCommand({ name: 'sync', io, setExit }, async (run) => {
      const stop = run.stopOnSignal((signal) => io.log.warn(`${signal}: stopping`));
      expect(stop.requested()).toBeNull();
      expect(signalListeners()).toBe(before + 2);
      process.emit('SIGTERM', 'SIGTERM');
      expect(stop.requested()).toBe('SIGTERM');
      expect(stop.aborted.aborted).toBe(true);
      seen.push(await stop.heard);
      // Node's own handler takes the next one: nothing of the command's is left listening.
      expect(signalListeners()).toBe(before);
      return { exitCode: exitCodeOfSignal(seen[0]!) };
    });
    expect(seen).toEqual(['SIGTERM']);
    expect(err).toEqual(['vidfeeds: SIGTERM: stopping']);
    expect(exit.code).toBe(143);
  });

  it('stops listening when the action ends, whether it ends well or with an error', async () => {
    const { io, setExit } = capture();
    await runCommand({ name: 'serve', io, setExit }, (run) => {
      run.stopOnSignal();
      run.stopOnSignal();
      expect(signalListeners()).toBe(before + 4);
      return { exitCode: 0 };
    });
    await expect(
      runCommand({ name: 'deploy', io, setExit }, (run) => {
        run.stopOnSignal();
        throw new Error('store refused');
      }),
    ).rejects.toThrow('store refused');
  });

  it('gives the exit codes of a shell for the signals: 130 and 143', () => {
    expect(exitCodeOfSignal('SIGINT')).toBe(130);
    expect(exitCodeOfSignal('SIGTERM')).toBe(143);
  });
});

describe('--wait', () => {
  it('takes 0 or more seconds, fractions too, and refuses anything else naming the flag', () => {
    expect(waitSeconds('0')).toBe(0);
    expect(waitSeconds('2.5')).toBe(2.5);
    for (const bad of ['-1', '', 'ten', '1e3', '.5']) expect(() => waitSeconds(bad), bad).toThrow('--wait needs a number of seconds (0 or more)');
  });
});

describe('the environment', () => {
  it('reads the XML engine and the write thread as the variables say, and hands the rest on', () => {
    expect(readEnvironment({})).toEqual({ xmlEngine: 'fast', writeThread: undefined, variables: {} });
    const env = { VIDFEEDS_XML_ENGINE: 'builder', VIDFEEDS_WRITE_THREAD: '0', SITE_DB: 'mysql://db/site' };
    expect(readEnvironment(env)).toMatchObject({ xmlEngine: 'builder', writeThread: false, variables: { SITE_DB: 'mysql://db/site' } });
    expect(readEnvironment({ VIDFEEDS_XML_ENGINE: 'other', VIDFEEDS_WRITE_THREAD: '1' })).toMatchObject({ xmlEngine: 'fast', writeThread: true });
    expect(readEnvironment({ VIDFEEDS_WRITE_THREAD: '' }).writeThread).toBeUndefined();
  });

  it("quiets the AWS SDK's Node notice, leaving a value the operator set as it is", () => {
    const unset: Record<string, string | undefined> = {};
    quietAwsSdkNodeNotice(unset);
    expect(unset).toEqual({ AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' });
    const set: Record<string, string | undefined> = { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'false' };
    quietAwsSdkNodeNotice(set);
    expect(set.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED).toBe('false');
  });
});
