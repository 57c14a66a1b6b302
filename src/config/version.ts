import { readFileSync } from 'node:fs';

/**
 * vidfeeds's own identity, from package.json: printed by `--version`, written into documents as
 * their generator (Atom `generator`, FOAF `admin:generatorAgent`, host configurations), and part of
 * every build's fingerprint (a new version builds everything again).
 */

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string; name: string };

export const VIDFEEDS_VERSION: string = pkg.version;

export const VIDFEEDS_GENERATOR = { name: 'vidfeeds', version: VIDFEEDS_VERSION, uri: 'https://www.npmjs.com/package/vidfeeds' } as const;
