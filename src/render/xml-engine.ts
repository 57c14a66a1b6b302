export type XmlEngine = 'fast' | 'builder';

/**
 * Which way documents are written: 'fast' (the default) streams them or takes the fast path where
 * it can; 'builder' sends every document made here through xmlbuilder2, as before (RSS feeds are
 * markup of their own, rss.ts). For the equivalence tests and the benchmark's before/after
 * figures. Set at start by the command line (VIDFEEDS_XML_ENGINE=builder, src/cli/xml-engine-setting.ts);
 * this layer reads no environment.
 */
let engine: XmlEngine = 'fast';

/** Sets the way documents are written from now on in this thread; returns the one it replaces. */
export function setXmlEngine(next: XmlEngine): XmlEngine {
  const previous = engine;
  engine = next;
  return previous;
}

/** The way documents are written now (see setXmlEngine). */
export function xmlEngine(): XmlEngine {
  return engine;
}
