import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { FORMATS } from '../../src/formats/registry.js';
import { buildInMemory, createDemoDb, testConfig } from '../helpers/site-fixture.js';
import { feedparser, jing, SCHEMAS, xmllintWellFormed } from '../helpers/validators.js';

const HUBS = ['https://hub.example.net/', 'https://second-hub.example.org/publish?x=1&y=2'];

describe('WebSub discovery links in the feeds', () => {
  it('names every configured hub and the feed itself in RSS and Atom, which still validate', () => {
    const f = createDemoDb({ users: 12, seed: 3 });
    const config = testConfig({ websub: { hubs: HUBS, feedsPerRequest: 100 } });
    const { writer } = buildInMemory(f.file, { only: new Set(['rss', 'atom']), config });
    const atoms = Object.fromEntries([...writer.files].filter(([p]) => p.endsWith('.atom')).map(([p, b]) => [p, b.toString('utf8')]));
    const rsses = Object.fromEntries([...writer.files].filter(([p]) => p.endsWith('.rss')).map(([p, b]) => [p, b.toString('utf8')]));
    expect(Object.keys(atoms).length).toBeGreaterThan(5);
    expect(jing(join(SCHEMAS, 'atom-rfc4287.rnc'), atoms)).toEqual({ ok: true, output: '' });
    expect(xmllintWellFormed(rsses).ok).toBe(true);
    const parsed = feedparser({ ...atoms, ...rsses });
    for (const [path, feed] of Object.entries(parsed)) {
      expect(feed.bozo, `${path}: ${feed.bozo_exception}`).toBe(false);
      const links = feed.feed.links as Array<Record<string, string>>;
      expect(links.filter((l) => l.rel === 'hub').map((l) => l.href), path).toEqual(HUBS);
      const user = path.split('/')[0]!;
      const kind = path.endsWith('.atom') ? 'atom' : 'rss';
      expect(links.filter((l) => l.rel === 'self').map((l) => l.href), path).toEqual([`https://videos.example.org/${encodeURIComponent(user)}/${kind}/`]);
    }
  });

  it('are the RSS and Atom feeds alone: their descriptors, not their archive pages, are WebSub topics', () => {
    expect(FORMATS.filter((f) => f.websubTopic === true).map((f) => f.name)).toEqual(['rss', 'atom']);
  });

  it('writes no hub link without hubs', () => {
    const f = createDemoDb({ users: 3, seed: 3 });
    const { writer } = buildInMemory(f.file, { only: new Set(['rss', 'atom']) });
    for (const body of writer.files.values()) expect(body.toString('utf8')).not.toContain('rel="hub"');
  });
});
