/**
 * Which way a document is written: 'fast' (the default) streams it or takes the fast path where it
 * can; 'builder' sends it through xmlbuilder2, as the fast paths are held to (RSS feeds are markup
 * of their own, rss.ts). Passed to each document (`xmlDocument`, `XmlDocument`, `FlatXmlDocument`),
 * from the site context of a build (`SiteContext.xmlEngine`): the equivalence tests and the
 * benchmark's `--xml builder` ask for 'builder'; nothing else does.
 */
export type XmlEngine = 'fast' | 'builder';
