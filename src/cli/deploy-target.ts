import type { RunSettings } from '../config/run-settings.js';
import { parseStoreTarget, type StoreTarget } from '../deploy/object-store.js';
import { UsageError } from './errors.js';

/** Where a deploy publishes: the target and the endpoint, as given (the flag's text or the setting's). */
export interface DeployTarget {
  to: string;
  target: StoreTarget;
  endpoint: string | undefined;
}

/**
 * The deploy target of a command: each flag wins over its setting in the configuration's `deploy`
 * (whose values the configuration's checks have passed); a bad flag stops the command before
 * anything is touched. Null when neither the flag nor `deploy.to` names a target.
 */
export function deployTargetOf(
  flags: { to: string | undefined; endpoint: string | undefined },
  setting: RunSettings['deploy'],
  toFlag: string,
): DeployTarget | null {
  const to = flags.to ?? setting.to ?? undefined;
  if (to === undefined) return null;
  const target = parseStoreTarget(to);
  if ('problem' in target) throw new UsageError(`${flags.to === undefined ? 'deploy.to' : toFlag}: ${target.problem}`);
  if (flags.endpoint !== undefined && !isHttpUrl(flags.endpoint)) throw new UsageError(`--endpoint must be an http(s) URL, not ${JSON.stringify(flags.endpoint)}`);
  return { to, target, endpoint: flags.endpoint ?? setting.endpoint ?? undefined };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.host !== '';
  } catch {
    return false;
  }
}
