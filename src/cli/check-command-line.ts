import { InvalidArgumentError, type Command, type Option } from 'commander';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CommandLineError } from './errors.js';

/**
 * Checks a command line against the options and arguments its command declares, before commander
 * parses it and before anything is read or written, and reports every problem at once (commander
 * stops at the first): unknown options (with "did you mean"), options missing their value, values
 * their parser refuses, required options left out, and missing or surplus arguments.
 *
 * An option required unless the configuration sets it (`--db`, `db`) counts as given when the
 * configuration file (`--config FILE`, else ./vidfeeds.config.json) has that key; a file that cannot
 * be read is left to the configuration's own checks.
 */

/** Options required unless a configuration setting stands in for them, by option. */
const requiredUnlessConfigured = new WeakMap<Option, { setting: string | null }>();

/**
 * Declares a required option. With `setting`, the configuration may give it instead, and its help
 * says so; the command then takes the flag, else the setting.
 */
export function requireOption(command: Command, flags: string, description: string, setting: string | null = null): Command {
  const text = setting === null ? `${description} (required)` : `${description} (required, unless \`${setting}\` is in the configuration)`;
  command.option(flags, text);
  requiredUnlessConfigured.set(command.options[command.options.length - 1]!, { setting });
  return command;
}

export function checkCommandLine(program: Command, argv: readonly string[], cwd = process.cwd()): void {
  const tokens = argv.slice(2);
  let command = program;
  let index = 0;
  // Down to the command named: `shards check`, `hosting nginx`, `recommendations approve`.
  while (index < tokens.length && command.commands.length > 0) {
    const named = command.commands.find((c) => c.name() === tokens[index] || c.aliases().includes(tokens[index]!));
    if (named === undefined) return; // help, --version, or an unknown command: commander answers it.
    command = named;
    index++;
  }
  if (command === program || command.commands.length > 0) return;
  const rest = tokens.slice(index);
  if (rest.some((t) => t === '--help' || t === '-h')) return;

  const problems: string[] = [];
  const seen = new Map<Option, string>();
  const operands: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const token = rest[i]!;
    if (token === '--') {
      operands.push(...rest.slice(i + 1));
      break;
    }
    if (!token.startsWith('-') || token === '-') {
      operands.push(token);
      continue;
    }
    const [flag, inline] = token.startsWith('--') && token.includes('=') ? [token.slice(0, token.indexOf('=')), token.slice(token.indexOf('=') + 1)] : [token, undefined];
    const option = command.options.find((o) => o.long === flag || o.short === flag);
    if (option === undefined) {
      problems.push(`${flag}: unknown option of \`vidfeeds ${commandPath(command)}\`${nearestOption(command, flag)}`);
      // Its value, if it has one, is no argument of the command.
      if (inline === undefined && rest[i + 1] !== undefined && !rest[i + 1]!.startsWith('-')) i++;
      continue;
    }
    let value: string | undefined = inline;
    if (value === undefined && (option.required || option.optional)) {
      const next = rest[i + 1];
      if (next !== undefined && (!next.startsWith('-') || (option.required && /^-\d/.test(next)))) {
        value = next;
        i++;
      }
    }
    if (option.required && value === undefined) {
      problems.push(`${option.long}: needs a value (${option.flags.replace(/^.*?\s+/, '')})`);
      continue;
    }
    if (!option.required && !option.optional && inline !== undefined) {
      problems.push(`${option.long}: takes no value, not ${JSON.stringify(inline)}`);
      continue;
    }
    seen.set(option, value ?? '');
    if (value !== undefined) {
      const problem = valueProblem(option, value);
      if (problem !== null) problems.push(`${option.long}: ${problem}`);
    }
  }

  for (const option of command.options) {
    const required = requiredUnlessConfigured.get(option);
    if (required === undefined || seen.has(option)) continue;
    if (required.setting !== null && configurationHas(required.setting, seen, command, cwd)) continue;
    problems.push(`${option.long}: required${required.setting === null ? '' : ` (or \`${required.setting}\` in the configuration)`}`);
  }

  const declared = command.registeredArguments;
  const needed = declared.filter((a) => a.required).length;
  if (operands.length < needed) {
    problems.push(`missing ${declared.slice(operands.length).filter((a) => a.required).map((a) => `<${a.name()}>`).join(' ')}`);
  } else if (!declared.some((a) => a.variadic) && operands.length > declared.length) {
    const surplus = operands.slice(declared.length).map((a) => JSON.stringify(a)).join(' ');
    problems.push(`\`vidfeeds ${commandPath(command)}\` takes ${declared.length === 0 ? 'no arguments' : `${declared.length} argument${declared.length === 1 ? '' : 's'}`}, not ${surplus}`);
  }
  if (problems.length > 0) throw new CommandLineError(problems);
}

function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** What the option's parser or choices say of the value; null when it is good. */
function valueProblem(option: Option, value: string): string | null {
  if (option.argChoices !== undefined && !option.argChoices.includes(value)) {
    return `must be one of ${option.argChoices.join(', ')}, not ${JSON.stringify(value)}`;
  }
  if (option.parseArg === undefined) return null;
  try {
    option.parseArg(value, option.defaultValue);
    return null;
  } catch (error) {
    if (error instanceof InvalidArgumentError) return `${error.message.replace(new RegExp(`^${option.long}:? `), '')}, not ${JSON.stringify(value)}`;
    throw error;
  }
}

/** Whether the configuration file this command line reads sets `setting` (a top-level key). */
function configurationHas(setting: string, seen: ReadonlyMap<Option, string>, command: Command, cwd: string): boolean {
  const configOption = command.options.find((o) => o.long === '--config');
  const named = configOption === undefined ? undefined : seen.get(configOption);
  const file = resolve(cwd, named ?? 'vidfeeds.config.json');
  if (!existsSync(file)) return false;
  try {
    const data = JSON.parse(readFileSync(file, 'utf8').replace(/^\uFEFF/, '')) as Record<string, unknown>;
    return data !== null && typeof data === 'object' && data[setting] !== undefined;
  } catch {
    // A file that does not parse is reported by the configuration's checks, with its line and column.
    return true;
  }
}

function nearestOption(command: Command, flag: string): string {
  const near = command.options
    .map((o) => o.long)
    .filter((long): long is string => long !== undefined)
    .map((long) => ({ long, distance: editDistance(flag, long) }))
    .filter(({ long, distance }) => distance <= Math.max(1, Math.floor(long.length / 3)))
    .sort((a, b) => a.distance - b.distance)[0];
  return near === undefined ? '' : `; did you mean ${near.long}?`;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}
