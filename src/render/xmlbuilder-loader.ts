import { createRequire } from 'node:module';
import type * as Xmlbuilder2 from 'xmlbuilder2';
import type { XMLBuilder, XMLBuilderCreateOptions } from 'xmlbuilder2/lib/interfaces.js';

/**
 * xmlbuilder2, loaded the first time a document or a name needs it, which the documents of our
 * formats never do: loading it costs memory and start-up time every command would pay
 * (docs/performance.md, "Figures behind the code").
 * test/render/xml-builder-lazy.test.ts holds the build to it.
 */
const require = createRequire(import.meta.url);
let builder: typeof Xmlbuilder2 | null = null;

/** A new xmlbuilder2 document (its `create`), loading the builder first if no one has. */
export function createXmlBuilder(options: XMLBuilderCreateOptions = {}): XMLBuilder {
  builder ??= require('xmlbuilder2') as typeof Xmlbuilder2;
  return builder.create(options);
}
