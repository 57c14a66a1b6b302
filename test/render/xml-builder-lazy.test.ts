import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { XmlDocument } from '../../src/render/xml-document.js';
import { buildInMemory, createDemoDb } from '../helpers/site-fixture.js';

/**
 * src/render/xml.ts loads xmlbuilder2 only when a document or a name needs it (about 14 MB and
 * 60 ms in each thread that renders). Each test file runs in a process of its own, and nothing
 * else here loads the builder, so Node's module cache says whether xml.ts did.
 */
const require = createRequire(import.meta.url);
const builderLoaded = () => require.resolve('xmlbuilder2') in require.cache;

describe('xmlbuilder2 is loaded only when a document needs it', () => {
  it('not for any document of the demo site (hostile values included), then for a name only it can judge', () => {
    const { file } = createDemoDb({ users: 24, seed: 3 });
    const { report } = buildInMemory(file);
    expect(report.documents).toBeGreaterThan(100);
    expect(report.failedCount).toBe(0);
    expect(builderLoaded()).toBe(false);
    const doc = new XmlDocument('root');
    doc.root.leaf('ünïcode', 'text');
    expect(doc.end()).toBe('<?xml version="1.0" encoding="UTF-8"?><root><ünïcode>text</ünïcode></root>\n');
    expect(builderLoaded()).toBe(true);
  });
});
