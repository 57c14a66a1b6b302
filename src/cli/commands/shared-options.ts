import { InvalidArgumentError, type Command } from 'commander';
import type { ConfigOverride } from '../../config/load-config.js';

/** Flags every command that reads the configuration accepts; flags win over the file. */
export interface ConfigFlags {
  config?: string;
  baseUrl?: string;
  siteName?: string;
  strict?: boolean;
}

export function configOptions(command: Command): Command {
  return command
    .option('--config <file>', 'configuration file (default: vidfeeds.config.json if present)')
    .option('--base-url <url>', 'base URL the tree is served under (overrides baseUrl)')
    .option('--site-name <name>', 'name of the site (overrides siteName)')
    .option('--strict', 'stop on a row that cannot be published instead of skipping it (overrides strict)');
}

/** The settings flags give, each with its flag, so that a bad value is blamed on the flag and not on the file. */
export function configOverrides(flags: ConfigFlags): Record<string, ConfigOverride> {
  return {
    baseUrl: { flag: '--base-url', value: flags.baseUrl },
    siteName: { flag: '--site-name', value: flags.siteName },
    strict: { flag: '--strict', value: flags.strict },
  };
}

export function positiveInteger(name: string, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`${name} must be a whole number`);
    const n = Number(value);
    if (n < 1 || n > max) throw new InvalidArgumentError(`${name} must be from 1 to ${max}`);
    return n;
  };
}

export function nonNegativeInteger(name: string, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`${name} must be a whole number`);
    const n = Number(value);
    if (n > max) throw new InvalidArgumentError(`${name} must be from 0 to ${max}`);
    return n;
  };
}
