import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HOSTILE_TEXT, PRIVATE_STRINGS, buildProfiles } from '../helpers/profile-fixture.js';
import { buildInMemory, createDemoDb, createTestDb, insertRow, insertUser, insertVideo, T0 } from '../helpers/site-fixture.js';
import { jing, SCHEMAS, xpath } from '../helpers/validators.js';

const ONLY = new Set(['xspf']);
const RNG = join(SCHEMAS, 'xspf-1_0.7.rng');
const BASE = 'https://videos.example.org';
/** XPath over the XSPF namespace without declaring it (xmllint --xpath has no namespace option). */
const x = (path: string) => path.replace(/\/(?=[a-zA-Z])/g, "/*[local-name()='").replace(/(\*\[local-name\(\)='[a-zA-Z]+)/g, "$1']");

const build = () => buildProfiles(ONLY);

function valid(documents: Record<string, string>): void {
  const result = jing(RNG, documents);
  expect(result.ok, result.output).toBe(true);
}

describe('XSPF playlist (/<user>/xspf/)', () => {
  it('lists the public saved videos with every track child of seed 2.5, valid against the XSPF RELAX NG schema', () => {
    const body = build().text('alice/xspf/index.xspf');
    valid({ alice: body });
    expect(body.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
    expect(xpath(body, `count(${x('/playlist/trackList/track')})`)).toBe('1');
    const track = (child: string) => xpath(body, `string(${x(`/playlist/trackList/track/${child}`)})`);
    expect(track('location')).toBe('https://cdn.example.org/v/101.flv');
    expect(track('title')).toBe('Bob builds a shed');
    expect(track('creator')).toBe('bob');
    expect(track('annotation')).toBe('Hammer time');
    expect(track('info')).toBe(`${BASE}/bobclip/embed/`);
    expect(track('image')).toBe('https://cdn.example.org/t/101.jpg');
    expect(track('album')).toBe('Videos saved by alice');
    expect(track('duration')).toBe('125000');
    expect(xpath(body, `string(${x('/playlist/creator')})`)).toBe('alice');
    expect(xpath(body, `string(${x('/playlist/info')})`)).toBe(`${BASE}/alice/`);
    expect(xpath(body, `string(${x('/playlist/location')})`)).toBe(`${BASE}/alice/xspf/`);
    // The private video and the suspended user's video she saved do not appear.
    for (const text of PRIVATE_STRINGS) expect(body, text).not.toContain(text);
  });

  it('falls back to the public viewing history when nothing public is saved (docs/formats.md, XSPF)', () => {
    const body = build().text('hidden/xspf/index.xspf');
    valid({ hidden: body });
    expect(xpath(body, `count(${x('/playlist/trackList/track')})`)).toBe('1');
    expect(xpath(body, `string(${x('/playlist/trackList/track/info')})`)).toBe(`${BASE}/bobclip/embed/`);
    expect(xpath(body, `string(${x('/playlist/trackList/track/album')})`)).toBe('Videos watched by hidden');
    expect(body).not.toContain('bobsecret');
  });

  it('keeps a private viewing history private: an empty trackList', () => {
    const f = createTestDb();
    const viewer = insertUser(f.db, { username: 'viewer', history_public: 0 });
    const v = insertVideo(f.db, viewer.id, { public_id: 'watched' });
    insertRow(f.db, 'viewing_history', { user_id: viewer.id, video_id: v.id, viewed_at: T0 });
    const body = buildInMemory(f.file, { only: ONLY }).writer.text('viewer/xspf/index.xspf');
    valid({ viewer: body });
    expect(xpath(body, `count(${x('/playlist/trackList/*')})`)).toBe('0');
    expect(body).not.toContain('watched');
  });

  it('gives a user with nothing a valid playlist with an empty trackList', () => {
    const body = build().text('nobody/xspf/index.xspf');
    valid({ nobody: body });
    expect(xpath(body, `count(${x('/playlist/trackList')})`)).toBe('1');
    expect(xpath(body, `count(${x('/playlist/trackList/*')})`)).toBe('0');
  });

  it('keeps hostile text escaped and readable, in UTF-8', () => {
    const body = build().text('mallory/xspf/index.xspf');
    valid({ mallory: body });
    const title = xpath(body, `string(${x('/playlist/trackList/track/title')})`);
    expect(title).toContain('<script>alert("x")</script>');
    expect(title).toContain('ends ]]> here');
    expect(title).toContain('🎬😀𝕏');
    expect(HOSTILE_TEXT).toContain('🎬');
    expect(Buffer.from(body, 'utf8').includes(Buffer.from('🎬', 'utf8'))).toBe(true);
    expect(xpath(body, `string-length(${x('/playlist/trackList/track/annotation')}) > 100000`)).toBe('true');
  });

  it('validates for every user of the demo site', () => {
    const { file } = createDemoDb();
    const { writer } = buildInMemory(file, { only: ONLY });
    const docs = Object.fromEntries([...writer.files].map(([path, body]) => [path, body.toString('utf8')]));
    expect(Object.keys(docs).length).toBeGreaterThan(30);
    valid(docs);
  });

  it('matches the reference document', async () => {
    await expect(build().text('alice/xspf/index.xspf')).toMatchFileSnapshot('__snapshots__/xspf-alice.xspf');
  });
});
