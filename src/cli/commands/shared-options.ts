import { InvalidArgumentError, type Command } from 'commander';
import { resolve } from 'node:path';
import { loadSettings, type ConfigOverride } from '../../config/load-config.js';
import type { SiteConfig } from '../../config/site-config.js';
import type { RunSettings } from '../../config/run-settings.js';
import { UsageError } from '../errors.js';
import type { Console } from '../output.js';

/** Flags every command that reads the configuration accepts; flags win over the file. */
export interface ConfigFlags {
  config?: string;
  baseUrl?: string;
  siteName?: string;
  strict?: boolean;
}

/** `--config`, and the site settings that shape URLs and names: on the commands that read them. */
export function configOptions(command: Command, { baseUrl = true, siteName = true }: { baseUrl?: boolean; siteName?: boolean } = {}): Command {
  command.option('--config <file>', 'configuration file (default: vidfeeds.config.json if present)');
  if (baseUrl) command.option('--base-url <url>', 'base URL the tree is served under (overrides baseUrl)');
  if (siteName) command.option('--site-name <name>', 'name of the site (overrides siteName)');
  return command;
}

/** `--strict`: only where rows are published (build, watch). */
export function strictOption(command: Command): Command {
  return command.option('--strict', 'stop on a row that cannot be published instead of skipping it (overrides strict)');
}

/** The exit codes a command's help lists, one per line. */
export function exitCodesHelp(command: Command, codes: Record<number, string>): Command {
  const lines = Object.entries(codes).map(([code, meaning]) => `  ${code.padEnd(4)}${meaning}`);
  return command.addHelpText('after', `\nExit codes:\n${lines.join('\n')}`);
}

/**
 * The configuration for a command: the site's settings and the run settings, with the file's
 * logging settings applied where no flag set them.
 */
export function readSettings(flags: ConfigFlags, io: Console): { site: SiteConfig; run: RunSettings } {
  const { site, run } = loadSettings({ configFile: flags.config, overrides: configOverrides(flags) });
  io.log.useConfig({ level: run.logLevel, format: run.logFormat });
  return { site, run };
}

/** The database a command reads: the flag (relative to the working directory), else the configuration's `db`. */
export function databaseOf(flag: string | undefined, run: RunSettings): string {
  if (flag !== undefined) return resolve(flag);
  if (run.db !== null) return run.db;
  throw new UsageError('--db is required (or set db in the configuration)');
}

/** The output directory: the flag, else the configuration's `out`, else out in the working directory. */
export function outOf(flag: string | undefined, run: RunSettings): string {
  return resolve(flag ?? run.out ?? 'out');
}

/** The state file if one is named: the flag, else the configuration's `state`. */
export function stateOf(flag: string | undefined, run: RunSettings): string | undefined {
  return flag !== undefined ? resolve(flag) : (run.state ?? undefined);
}

/**
 * The removal guard of a build or a sync: the configuration's share and minimum, unless
 * `--allow-removals` lifts it.
 */
export function removalGuardOf(flags: { allowRemovals?: boolean }, run: RunSettings): { maxShare: number; minimum: number } | undefined {
  return flags.allowRemovals ? undefined : { maxShare: run.maxRemovalShare, minimum: run.removalGuardMinimum };
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
