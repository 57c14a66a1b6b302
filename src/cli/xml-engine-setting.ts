import type { XmlEngine } from '../render/xml-engine.js';

/**
 * The way XML documents are written, as the environment asks: VIDFEEDS_XML_ENGINE=builder sends
 * every document through xmlbuilder2 (the bench's `--xml builder`, for before/after figures);
 * anything else, or nothing, is the fast way. Read here, at the command line, by `vidfeeds build`,
 * and handed to the build in its site context (SiteContext.xmlEngine).
 */
export function xmlEngineSetting(env: NodeJS.ProcessEnv): XmlEngine {
  return env.VIDFEEDS_XML_ENGINE === 'builder' ? 'builder' : 'fast';
}
