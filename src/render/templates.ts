import Handlebars from 'handlebars';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT, VidfeedsError } from '../config/vidfeeds-error.js';

/**
 * Handlebars in its own instance, compiled with `strict: true` so a misspelt field is an error at
 * build time, not an empty string in a served page. Templates use `{{ }}` (escaped) everywhere.
 */

/** The templates that ship with vidfeeds. */
export const SHIPPED_TEMPLATES_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../templates');

/** A template that is missing or does not compile. Raised before any file is written; exit code 2. */
export class TemplateError extends VidfeedsError {
  constructor(
    readonly template: string,
    problem: string,
    cause?: unknown,
  ) {
    super(EXIT.usage, { where: `template ${template}`, what: problem, cause });
  }
}

export const handlebars = Handlebars.create();

export type CompiledTemplate = (context: object) => string;

/**
 * Finds `<name>.hbs` under `subdir` in the site's own templates directory first, then in the
 * shipped one, compiles it, and checks that it runs on `sample`, so errors surface before a build.
 */
export function loadTemplate(subdir: string, name: string, siteDir: string | null, sample: object): { template: CompiledTemplate; file: string; source: string } {
  const candidates = [siteDir && join(resolve(siteDir), subdir, `${name}.hbs`), join(SHIPPED_TEMPLATES_DIR, subdir, `${name}.hbs`)].filter(
    (c): c is string => Boolean(c),
  );
  const file = candidates.find((c) => existsSync(c));
  if (file === undefined) {
    throw new TemplateError(`${subdir}/${name}.hbs`, `not found (looked in ${candidates.join(' and ')})`);
  }
  const source = readFileSync(file, 'utf8');
  let template: CompiledTemplate;
  try {
    template = handlebars.compile(source, { strict: true, noEscape: false });
    template(sample);
  } catch (error) {
    throw new TemplateError(file, templateProblem(error), error);
  }
  return { template, file, source };
}

/**
 * Handlebars' error as one line an operator can act on: a parse error keeps its first line (where)
 * and its last (what was expected); a strict-mode lookup names the field and its line and column.
 */
export function templateProblem(error: unknown): string {
  const lines = (error instanceof Error ? error.message : String(error)).split('\n').filter((line) => line.trim() !== '');
  const first = lines[0] ?? 'unknown error';
  const strict = /^(".*" not defined) in .* - (\d+):(\d+)$/.exec(first);
  if (strict) return `${strict[1]} (line ${strict[2]}, column ${Number(strict[3]) + 1})`;
  return lines.length > 1 ? `${first} ${lines[lines.length - 1]}` : first;
}
