import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RelaxNGValidator, XmlBufferInputProvider, XmlDocument, xmlRegisterInputProvider, XsdValidator } from 'libxml2-wasm';
import type { Format } from '../formats/format.js';

/**
 * Whether a document parses as its format and meets its schema where one ships with the project
 * (`vidfeeds check`). In process, offline: XML through libxml2 compiled to WebAssembly
 * (libxml2-wasm: XML Schema and RELAX NG), JSON through ajv. FOAF and RSS have no schema and are
 * checked for well-formedness; HTML and text for being UTF-8.
 */

/**
 * Where the formats' schemas are: `schemas/formats/` of the package (their origins and licences
 * in its README), the same files the tests validate with; our own format's schema is in docs/schemas.
 */
export const SCHEMAS_DIR = fileURLToPath(new URL('../../schemas/formats/', import.meta.url));
const OWN_SCHEMAS_DIR = fileURLToPath(new URL('../../docs/schemas/', import.meta.url));

type Kind = 'xml' | 'json' | 'html' | 'text';

interface Rule {
  kind: Kind;
  /** The schema's file: under SCHEMAS_DIR, or `own:` for docs/schemas. Sitemaps choose by root element. */
  schema?: string | ((root: string) => string);
}

/** By format name (src/formats/registry.ts); a format not listed is checked by its media type. */
const RULES: Readonly<Record<string, Rule>> = {
  rss: { kind: 'xml' },
  atom: { kind: 'xml', schema: 'atom-rfc4287.rng' },
  'rss-archive': { kind: 'xml' },
  'atom-archive': { kind: 'xml', schema: 'atom-rfc4287.rng' },
  recommendations: { kind: 'xml', schema: 'own:recommendations.xsd' },
  foaf: { kind: 'xml' },
  hcard: { kind: 'html' },
  xspf: { kind: 'xml', schema: 'xspf-1_0.7.rng' },
  // UserEmail, which APML 0.6 requires, is written only for users who chose to show it.
  apml: { kind: 'xml', schema: 'apml-0.6-email-optional.xsd' },
  opml: { kind: 'xml', schema: 'opml-2.0-spec.rng' },
  oembed: { kind: 'json', schema: 'oembed-1.0-response.schema.json' },
  'oembed-json': { kind: 'json', schema: 'oembed-1.0-response.schema.json' },
  'oembed-xml': { kind: 'xml', schema: 'oembed-1.0-response.rng' },
  'oembed-html': { kind: 'html' },
  embed: { kind: 'html' },
  head: { kind: 'html' },
  sitemap: { kind: 'xml', schema: (root) => (root === 'sitemapindex' ? 'siteindex.xsd' : 'sitemap-with-video.xsd') },
  robots: { kind: 'text' },
  opensearch: { kind: 'xml', schema: 'opensearch-1.1-description.rng' },
  crossdomain: { kind: 'xml', schema: 'cross-domain-policy.rng' },
};

function ruleOf(format: string, formats: readonly Format[]): Rule {
  const rule = RULES[format];
  if (rule !== undefined) return rule;
  const type = formats.find((f) => f.name === format)?.mediaType ?? '';
  return { kind: /json/.test(type) ? 'json' : /xml/.test(type) ? 'xml' : /html/.test(type) ? 'html' : 'text' };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

interface XmlValidator {
  validate(doc: XmlDocument): void;
  dispose(): void;
}

export class DocumentChecker {
  private readonly xml = new Map<string, XmlValidator>();
  private readonly schemaDocs: XmlDocument[] = [];
  private readonly json = new Map<string, ValidateFunction>();
  private ajv: Ajv | undefined;
  /** Schemas that could not be found: named once, not per document. */
  readonly missingSchemas = new Set<string>();
  /** How many documents were checked against a schema. */
  validated = 0;

  constructor(
    private readonly formats: readonly Format[],
    private readonly schemasDir: string = SCHEMAS_DIR,
  ) {}

  /** Why `body`, a document of `format`, does not parse or meet its schema; null when it does. */
  problem(format: string, body: Buffer): string | null {
    const rule = ruleOf(format, this.formats);
    let text: string;
    try {
      text = utf8.decode(body);
    } catch {
      return 'not UTF-8';
    }
    if (rule.kind === 'json') return this.jsonProblem(text, rule);
    if (rule.kind === 'xml') return this.xmlProblem(body, rule);
    return null;
  }

  private schemaFile(name: string): string | null {
    const file = name.startsWith('own:') ? join(OWN_SCHEMAS_DIR, name.slice(4)) : join(this.schemasDir, name);
    if (existsSync(file)) return file;
    this.missingSchemas.add(file);
    return null;
  }

  private jsonProblem(text: string, rule: Rule): string | null {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      return `not JSON: ${(error as Error).message}`;
    }
    if (typeof rule.schema !== 'string') return null;
    const validate = this.jsonSchema(rule.schema);
    if (validate === null) return null;
    this.validated++;
    if (validate(value)) return null;
    const first = validate.errors?.[0];
    return `does not meet ${rule.schema}: ${first?.instancePath || '(document)'} ${first?.message ?? ''}`.trim();
  }

  private jsonSchema(name: string): ValidateFunction | null {
    const known = this.json.get(name);
    if (known !== undefined) return known;
    const file = this.schemaFile(name);
    if (file === null) return null;
    if (this.ajv === undefined) {
      this.ajv = new Ajv({ allErrors: false, strict: false });
      (addFormatsModule as unknown as (ajv: Ajv) => void)(this.ajv);
    }
    const validate = this.ajv.compile(JSON.parse(readFileSync(file, 'utf8')) as object);
    this.json.set(name, validate);
    return validate;
  }

  private xmlProblem(body: Buffer, rule: Rule): string | null {
    let doc: XmlDocument;
    try {
      doc = XmlDocument.fromBuffer(body);
    } catch (error) {
      return `not well-formed XML: ${firstLine(error)}`;
    }
    try {
      if (rule.schema === undefined) return null;
      const name = typeof rule.schema === 'string' ? rule.schema : rule.schema(doc.root.name);
      const validator = this.xmlSchema(name);
      if (validator === null) return null;
      this.validated++;
      try {
        validator.validate(doc);
        return null;
      } catch (error) {
        return `does not meet ${name.replace(/^own:/, '')}: ${firstLine(error)}`;
      }
    } finally {
      doc.dispose();
    }
  }

  private xmlSchema(name: string): XmlValidator | null {
    const known = this.xml.get(name);
    if (known !== undefined) return known;
    const file = this.schemaFile(name);
    if (file === null) return null;
    provideSchemas(dirname(file));
    // The schema's document lives as long as its validator: libxml2's compiled schema may point into it.
    const schemaDoc = XmlDocument.fromBuffer(readFileSync(file), { url: file });
    this.schemaDocs.push(schemaDoc);
    const validator = file.endsWith('.rng') ? RelaxNGValidator.fromDoc(schemaDoc) : XsdValidator.fromDoc(schemaDoc);
    this.xml.set(name, validator);
    return validator;
  }

  close(): void {
    for (const validator of this.xml.values()) validator.dispose();
    for (const doc of this.schemaDocs) doc.dispose();
    this.xml.clear();
    this.schemaDocs.length = 0;
  }
}

/**
 * libxml2-wasm reads no file itself: a schema that imports another (sitemap-with-video.xsd) finds
 * it among the schema files of its folder, served from memory. Only those paths are served, so
 * no document checked can make libxml2 read anything else.
 */
let schemaFiles: XmlBufferInputProvider | null = null;
const providedDirs = new Set<string>();

function provideSchemas(dir: string): void {
  if (providedDirs.has(dir)) return;
  providedDirs.add(dir);
  if (schemaFiles === null) {
    schemaFiles = new XmlBufferInputProvider({});
    xmlRegisterInputProvider(schemaFiles);
  }
  for (const name of readdirSync(dir)) if (name.endsWith('.xsd')) schemaFiles.addBuffer(join(dir, name), readFileSync(join(dir, name)));
}

/** libxml2's first message, with its line: `line 3: Opening and ending tag mismatch`. */
function firstLine(error: unknown): string {
  const details = (error as { details?: Array<{ message: string; line?: number; col?: number }> }).details;
  const first = details?.[0];
  if (first !== undefined) return `${first.line ? `line ${first.line}${first.col ? `, column ${first.col}` : ''}: ` : ''}${first.message.trim()}`;
  return ((error as Error).message ?? String(error)).split('\n')[0]!.trim();
}
