import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/** The JSON Schema of `--json` reports, as shipped in docs/. */
const SCHEMA = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../docs/schemas/report.schema.json'), 'utf8')) as object;
const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, strictRequired: false });
(addFormatsModule as unknown as (ajv: Ajv) => void)(ajv);
const validate = ajv.compile(SCHEMA);

/** Every way `report` fails the report schema, as readable lines; empty when it meets it. */
export function validateReport(report: unknown): string[] {
  if (validate(report)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '(report)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}

/** Holds a command's `--json` stdout to the report schema; a process killed before its report printed none. */
export function expectSchemaReport(stdout: string): void {
  if (stdout.trim() === '') return;
  const problems = validateReport(JSON.parse(stdout));
  if (problems.length > 0) throw new Error(`the --json report does not meet docs/schemas/report.schema.json:\n${problems.join('\n')}`);
}

/** A command's result, once its `--json` stdout met the report schema (expectSchemaReport). */
export function schemaChecked<T extends { stdout: string }>(result: T): T {
  expectSchemaReport(result.stdout);
  return result;
}
