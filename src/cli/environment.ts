import type { XmlEngine } from '../render/xml-engine.js';

/**
 * Every environment variable vidfeeds reads is read here, once, when a command starts
 * (`runCommand`, command-runner.ts), and handed down as values: below src/cli, code takes its
 * settings as parameters, so a test or a library caller sets them without touching the process.
 */
export interface CommandEnvironment {
  /**
   * VIDFEEDS_XML_ENGINE=builder sends every XML document through xmlbuilder2 (the bench's
   * `--xml builder`, for before/after figures); anything else, or nothing, is the fast way.
   */
  readonly xmlEngine: XmlEngine;
  /**
   * VIDFEEDS_WRITE_THREAD=0 writes on the build's thread, =1 on a thread of its own; unset, the
   * machine's cores decide (docs/performance.md).
   */
  readonly writeThread: boolean | undefined;
  /** The variables a configuration names (`sync.fromEnv`), as the process has them. */
  readonly variables: Readonly<Record<string, string | undefined>>;
}

/** The environment of this process, as the commands use it. */
export function readEnvironment(env: Readonly<Record<string, string | undefined>> = process.env): CommandEnvironment {
  const writeThread = env.VIDFEEDS_WRITE_THREAD;
  return {
    xmlEngine: env.VIDFEEDS_XML_ENGINE === 'builder' ? 'builder' : 'fast',
    writeThread: writeThread === undefined || writeThread === '' ? undefined : writeThread !== '0',
    variables: env,
  };
}

/**
 * Before the AWS SDK is loaded: its notice about the Node versions its future releases will need
 * is not the operator's to act on (vidfeeds pins the SDK). The SDK reads this setting from the
 * environment only (no client option turns the notice off), so this is the one place the
 * command line writes the environment, and it leaves a value the operator set as it is.
 */
export function quietAwsSdkNodeNotice(env: Record<string, string | undefined> = process.env): void {
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
}
