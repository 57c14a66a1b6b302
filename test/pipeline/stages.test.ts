import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { ReportTally, StrictModeError } from '../../src/pipeline/build-report.js';
import { BuildState } from '../../src/pipeline/build-state.js';
import { commitState } from '../../src/pipeline/record/commit-state.js';
import { MemoryWriter } from '../../src/pipeline/write/output-writer.js';
import { pruneStale } from '../../src/pipeline/prune/prune-stale.js';
import { readUsers, readVideos, type OwnerRead, type ReadScope } from '../../src/pipeline/read/read-owners.js';
import { renderOwner, renderSiteFormat, type RenderedDocument } from '../../src/pipeline/render/render-documents.js';
import { formsPlan, runBuild } from '../../src/pipeline/run-build.js';
import { createSiteContext } from '../../src/pipeline/render/site-context.js';
import { compareAndWrite, keepFailed } from '../../src/pipeline/write/write-documents.js';
import { SiteReader } from '../../src/db/site-reader.js';
import { readLimits } from '../../src/formats/read-limits.js';
import type { ArchiveFormat, SiteContext, SiteFormat, UserFormat } from '../../src/formats/format.js';
import { planArchivePages } from '../../src/formats/archive-places.js';
import { rssArchive } from '../../src/formats/archives.js';
import type { VideoView } from '../../src/model/views.js';
import { FORMATS } from '../../src/formats/registry.js';
import { createTestDb, insertUser, insertVideo, testConfig } from '../helpers/site-fixture.js';

/**
 * Each stage of the build (src/pipeline/run-build.ts) on its own: inputs and outputs as values, the
 * writer and the state in memory.
 */

const NOW = new Date(Date.UTC(2026, 0, 1));

function fixture() {
  const { db: writable, file } = createTestDb();
  const alice = insertUser(writable, { username: 'alice' });
  insertUser(writable, { username: '.hidden' });
  const clip = insertVideo(writable, alice.id, { public_id: 'clip' });
  insertVideo(writable, alice.id, { public_id: 'private', visibility: 'private' });
  const db = new Database(file, { readonly: true });
  const config = testConfig();
  const site = createSiteContext(config, FORMATS, NOW);
  const reader = new SiteReader(db, readLimits(config.recommendationsCount));
  const userFormats = FORMATS.filter((f): f is UserFormat => f.scope === 'user');
  const scope: ReadScope = { reader, paths: site.paths, parts: new Set(userFormats.flatMap((f) => f.needs)) };
  return { writable, db, site, reader, scope, alice, clip, userFormats };
}

function doc(path: string, text: string): RenderedDocument {
  return { format: FORMATS[0]!, path, key: 'alice', owner: { kind: 'user', id: 1 }, user: 'alice', text };
}

describe('the read stage', () => {
  it('reads each publishable owner once and names the rows it skips, with the reason', () => {
    const { scope, alice, clip } = fixture();
    const users = [...readUsers(scope, { every: true })];
    expect(users.map((r) => (r.kind === 'skipped' ? `skipped ${r.skipped.key}: ${r.skipped.reason}` : `${r.kind} ${r.key}`)).sort()).toEqual([
      'skipped .hidden: starts with a dot (hidden files are never served)',
      'user alice',
    ]);
    const videos = [...readVideos(scope, { every: true })];
    expect(videos.map((r) => (r.kind === 'video' ? r.key : r.kind))).toEqual(['clip']);
    // By id, as an incremental build asks: the same owners.
    const byId = [...readUsers(scope, { ids: new Set([alice.id]) })];
    expect(byId).toMatchObject([{ kind: 'user', key: 'alice', owner: { kind: 'user', id: alice.id } }]);
    expect([...readVideos(scope, { ids: new Set([clip.id, 999_999]) })]).toMatchObject([{ kind: 'video', key: 'clip' }]);
    expect([...readUsers(scope, 'none')]).toEqual([]);
  });

  it('leaves out the owners of other shards', () => {
    const { scope } = fixture();
    const names = (index: number) =>
      [...readUsers({ ...scope, shard: { index, count: 2 } }, { every: true })].map((r) => (r.kind === 'skipped' ? r.skipped.key : r.key));
    const [one, two] = [names(1), names(2)];
    expect([...one, ...two].sort()).toEqual(['.hidden', 'alice']);
    expect(one.filter((n) => two.includes(n))).toEqual([]);
  });
});

describe('the render stage', () => {
  it('gives the same bytes for the same read, at the paths of the URL scheme', () => {
    const { scope, site } = fixture();
    const read = [...readUsers(scope, { every: true })].find((r): r is Exclude<OwnerRead, { kind: 'skipped' }> => r.kind === 'user')!;
    // The user formats of one document each: alice has no archive pages.
    const formats = { user: FORMATS.filter((f): f is UserFormat => f.scope === 'user' && f.paged === undefined), video: [] };
    const first = [...renderOwner(read, formats, site)];
    const second = [...renderOwner(read, formats, site)];
    expect(first.map((r) => (r.ok ? r.document.path : r.failed.path))).toEqual(formats.user.map((f) => `alice/${f.dir}/${f.file}`));
    expect(second.map((r) => (r.ok ? r.document.text : null))).toEqual(first.map((r) => (r.ok ? r.document.text : null)));
    expect(first.every((r) => r.ok)).toBe(true);
  });

  it('turns a renderer that throws into a failure naming the format, the key and the path', () => {
    const { scope, site } = fixture();
    const read = [...readUsers(scope, { every: true })].find((r): r is Exclude<OwnerRead, { kind: 'skipped' }> => r.kind === 'user')!;
    const broken: UserFormat = { ...FORMATS.find((f): f is UserFormat => f.scope === 'user' && f.name === 'rss')!, render: () => { throw new Error('no'); } };
    const [result] = renderOwner(read, { user: [broken], video: [] }, site);
    expect(result).toMatchObject({ ok: false, failed: { path: 'alice/rss/index.rss', failure: { format: 'rss', key: 'alice', message: 'no' } } });
    const brokenSite: SiteFormat = { ...FORMATS.find((f): f is SiteFormat => f.scope === 'site')!, render: () => { throw new Error('nope'); } };
    expect([...renderSiteFormat(brokenSite, { usernames: () => [], videoIds: () => [] }, site)]).toMatchObject([
      { ok: false, failed: { path: brokenSite.file, failure: { message: 'nope' } } },
    ]);
  });
});

describe('the render stage for archive pages', () => {
  /** The ids of an archived list of 250 rows: three pages or more. */
  const IDS = Array.from({ length: 250 }, (_, i) => i + 1);
  const archiveRead = (read: Extract<OwnerRead, { kind: 'user' }>, uploads: number[], pages: () => Iterable<VideoView[]>): Extract<OwnerRead, { kind: 'user' }> => ({
    ...read,
    bundle: { ...read.bundle, archived: { uploads, groups: [] } },
    archive: { uploads: () => pages(), groups: () => [] },
  });
  const userRead = () => {
    const { scope, site } = fixture();
    const read = [...readUsers(scope, { every: true })].find((r): r is Extract<OwnerRead, { kind: 'user' }> => r.kind === 'user')!;
    return { read, site };
  };

  /** Each page's path, or its failure and why. */
  const outcomes = (read: Extract<OwnerRead, { kind: 'user' }>, format: ArchiveFormat, site: SiteContext) =>
    [...renderOwner(read, { user: [format], video: [] }, site)].map((r) => (r.ok ? r.document.path : `failed ${r.failed.path}: ${r.failed.failure.message}`));

  it('renders one document per page, and a page that throws fails alone', () => {
    const { read, site } = userRead();
    const video = read.bundle.uploads[0]!;
    const [first, second, third] = planArchivePages(IDS).map((p) => p.number) as [number, number, number];
    const broken: ArchiveFormat = { ...rssArchive, renderPage: (view, page, s) => { if (page.number === second) throw new Error('page two'); return rssArchive.renderPage(view, page, s); } };
    expect(outcomes(archiveRead(read, IDS, () => [[video], [video], [video]]), broken, site)).toEqual([
      `alice/rss/archive/${first}/page.rss`,
      `failed alice/rss/archive/${second}/page.rss: page two`,
      `alice/rss/archive/${third}/page.rss`,
    ]);
  });

  it('fails every page from the one the list could not be read for (a failed document keeps its file and record)', () => {
    const { read, site } = userRead();
    const video = read.bundle.uploads[0]!;
    const unreadable = function* () {
      yield [video];
      throw new Error('disk I/O error');
    };
    const [first, second, third] = planArchivePages(IDS).map((p) => p.number) as [number, number, number];
    expect(outcomes(archiveRead(read, IDS, unreadable), rssArchive, site)).toEqual([
      `alice/rss/archive/${first}/page.rss`,
      `failed alice/rss/archive/${second}/page.rss: disk I/O error`,
      `failed alice/rss/archive/${third}/page.rss: the archive could not be read: disk I/O error`,
    ]);
  });

  it('renders none for a user with nothing beyond the feed', () => {
    const { read, site } = userRead();
    expect([...renderOwner(archiveRead(read, [], () => { throw new Error('not read'); }), { user: [rssArchive], video: [] }, site)]).toEqual([]);
  });
});

describe('the compare-and-write stage', () => {
  it('writes new and changed bytes, leaves identical ones alone, and records every one', () => {
    const writer = new MemoryWriter();
    const state = new BuildState(':memory:');
    state.begin();
    const target = { writer, state, verify: false, startedEmpty: true, compression: [], formsUnknown: false };
    expect(compareAndWrite(target, doc('alice/rss/index.rss', 'one'))).toEqual({ written: true, bytes: 3, isNew: true, movedFrom: null });
    expect(compareAndWrite(target, doc('alice/rss/index.rss', 'one'))).toEqual({ written: false, bytes: 0, isNew: false, movedFrom: null });
    expect(writer.writes).toBe(1);
    expect(compareAndWrite(target, doc('alice/rss/index.rss', 'two'))).toEqual({ written: true, bytes: 3, isNew: false, movedFrom: null });
    expect(writer.text('alice/rss/index.rss')).toBe('two');
    // The same path written for another row (the name replaced under a new id): new to the site files.
    const taken = { ...doc('alice/rss/index.rss', 'two'), owner: { kind: 'user' as const, id: 7 } };
    expect(compareAndWrite(target, taken)).toEqual({ written: false, bytes: 0, isNew: true, movedFrom: 1 });
    // Without a record the disk decides (a lost state), unless the output started empty.
    const lost = { writer, state: new BuildState(':memory:'), verify: false, startedEmpty: false, compression: [], formsUnknown: false };
    lost.state.begin();
    expect(compareAndWrite(lost, doc('alice/rss/index.rss', 'two'))).toEqual({ written: false, bytes: 0, isNew: true, movedFrom: null });
    expect(keepFailed(lost, { format: FORMATS[0]!, path: 'bob/rss/index.rss', key: 'bob', owner: { kind: 'user', id: 2 }, failure: { format: 'rss', key: 'bob', path: 'bob/rss/index.rss', message: 'x' }, where: '' })).toBe(true);
  });
});

describe('the compare-and-write stage with compressed forms', () => {
  it('writes the forms before their document, and brings an unchanged document\'s forms in line when asked', () => {
    const writer = new MemoryWriter();
    const order: string[] = [];
    const write = writer.write.bind(writer);
    writer.write = (path, body) => {
      order.push(path);
      write(path, body);
    };
    const state = new BuildState(':memory:');
    state.begin();
    const target = { writer, state, verify: false, startedEmpty: true, compression: ['gzip', 'br'] as const, formsUnknown: false };
    const rss = doc('alice/rss/index.rss', 'x'.repeat(1000));
    const first = compareAndWrite(target, rss);
    expect(order).toEqual(['alice/rss/index.rss.gz', 'alice/rss/index.rss.br', 'alice/rss/index.rss']);
    expect(first.bytes).toBeGreaterThan(1000);
    writer.remove('alice/rss/index.rss.br');
    expect(compareAndWrite(target, rss)).toMatchObject({ written: false, bytes: 0 });
    const synced = compareAndWrite({ ...target, compression: ['gzip'], formsUnknown: true, startedEmpty: false }, rss);
    expect(synced).toMatchObject({ written: false, bytes: 0 });
    expect([...writer.files.keys()].sort()).toEqual(['alice/rss/index.rss', 'alice/rss/index.rss.gz']);
  });
});

describe('the compressed forms around a build', () => {
  it('are brought in line when the encodings changed or were never recorded, and pruned as they may be on disk', () => {
    expect(formsPlan(['gzip'], ['gzip'], false)).toEqual({ unknown: false, onDisk: ['gzip'] });
    expect(formsPlan(['gzip'], ['br'], false)).toEqual({ unknown: true, onDisk: ['gzip', 'br'] });
    expect(formsPlan(null, [], false)).toEqual({ unknown: true, onDisk: ['br', 'gzip'] });
    expect(formsPlan(null, ['gzip'], true)).toEqual({ unknown: false, onDisk: ['gzip'] });
  });
});

describe('the prune stage', () => {
  it('removes the paths it is given and their records, and nothing else', () => {
    const writer = new MemoryWriter();
    const state = new BuildState(':memory:');
    state.begin();
    const target = { writer, state, verify: false, startedEmpty: true, compression: [], formsUnknown: false };
    compareAndWrite(target, doc('alice/rss/index.rss', 'a'));
    compareAndWrite(target, doc('alice/atom/index.atom', 'b'));
    writer.write('alice/rss/index.rss.gz', Buffer.from('form'));
    const removed: string[] = [];
    expect(pruneStale(['alice/rss/index.rss', 'gone/rss/index.rss'], { writer, state, formsOnDisk: ['gzip'] }, (path) => removed.push(path))).toBe(2);
    expect(removed).toEqual(['alice/rss/index.rss']);
    expect([...writer.files.keys()]).toEqual(['alice/atom/index.atom']);
    expect(state.previous('alice/rss/index.rss')).toBeUndefined();
    expect(state.previous('alice/atom/index.atom')).toBeDefined();
  });
});

describe('the record stage', () => {
  const fingerprint = { vidfeedsVersion: '1', codeHash: 'c', configHash: 'h', formatsHash: 'f', templatesHash: 't' };
  const log = { databaseId: 'db', position: 7, oldest: 1 };
  const finished = (mode: 'full' | 'incremental' | 'partial', failedCount: number) => {
    const state = new BuildState(':memory:');
    state.begin();
    state.finish({ ...fingerprint, databaseId: 'db', position: 3 });
    state.commit();
    state.begin();
    const tally = new ReportTally(undefined, false);
    Object.assign(tally.report, { mode, failedCount });
    commitState({ writer: new MemoryWriter(), state }, tally.report, fingerprint, log);
    return { basis: state.basis()?.position ?? null, dropped: state.basisDropped() };
  };

  it('moves the basis only after a complete build without failures', () => {
    expect(finished('full', 0)).toEqual({ basis: 7, dropped: null });
    expect(finished('incremental', 0)).toEqual({ basis: 7, dropped: null });
    expect(finished('partial', 0)).toEqual({ basis: 3, dropped: null });
    expect(finished('incremental', 2)).toEqual({ basis: 3, dropped: null });
    expect(finished('full', 2)).toEqual({ basis: null, dropped: 'the last full build had 2 failed documents' });
  });
});

describe('the stages together', () => {
  it('stop at an unpublishable row under --strict, and keep nothing of the build', () => {
    const { reader, site } = fixture();
    const state = new BuildState(':memory:');
    expect(() => runBuild({ reader, writer: new MemoryWriter(), state, site, formats: FORMATS }, { strict: true })).toThrow(StrictModeError);
    expect(state.count()).toBe(0);
  });

  it('take the clock they are given', () => {
    const { reader, site } = fixture();
    let now = 100;
    const report = runBuild({ reader, writer: new MemoryWriter(), state: new BuildState(':memory:'), site, formats: FORMATS, clock: () => (now += 2.5) });
    expect(report.seconds).toBe(2.5);
    expect(report).toMatchObject({ mode: 'full', skippedCount: 1, failedCount: 0 });
    expect(report.written).toBe(report.documents);
  });
});
