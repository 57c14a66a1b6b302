import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Programs some tests need from Debian (`.ci/run` installs them). A test that needs one skips
 * with a message naming it and its package when it is absent, and only then; in CI none is.
 */

/** The full path of an executable: `name` itself when absolute, else the first match on PATH. */
export function findProgram(name: string): string | null {
  const candidates = name.startsWith('/') ? [name] : (process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, name));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * The programs of `needs` (name → Debian package) that are missing, as one message for a skipped
 * test ("skipped: ... not installed (apt-get install ...)"), printed once; null when all are there.
 */
export function missingPrograms(what: string, needs: Record<string, string>): string | null {
  const missing = Object.entries(needs).filter(([name]) => findProgram(name) === null);
  if (missing.length === 0) return null;
  const message = `skipped ${what}: ${missing.map(([name]) => name).join(', ')} not installed (apt-get install ${[...new Set(missing.map(([, pkg]) => pkg))].join(' ')}; .ci/run installs it)`;
  console.warn(message);
  return message;
}
