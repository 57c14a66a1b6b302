import { describe, expect, it } from 'vitest';
import { planArchivePages, RSS_ARCHIVE_PLACE, type ArchivePagePlan } from '../../src/formats/archive-places.js';
import { FORMATS } from '../../src/formats/registry.js';
import { routesOf } from '../../src/hosting/routes.js';
import { keyedFile, matchFile } from '../../src/paths/url-scheme.js';

/**
 * Which archive page holds which row (planArchivePages): the promise is that a change to the
 * list touches the page holding the changed row and no other, that a page's number names the same
 * entries whatever the list goes through (RFC 5005 section 4), and that pages stay of a bounded
 * size whatever the ids look like.
 */

/** The page number of each id of a list, by its plan. */
function pageOf(ids: readonly number[], plan: readonly ArchivePagePlan[]): Map<number, number> {
  const pages = new Map<number, number>();
  let i = 0;
  for (const page of plan) for (let n = 0; n < page.rows; n++) pages.set(ids[i++]!, page.number);
  return pages;
}

/** The pages whose rows differ between two plans of lists (a page is its number and its ids). */
function changedPages(before: readonly number[], after: readonly number[]): number[] {
  const members = (ids: readonly number[]) => {
    const byPage = new Map<number, number[]>();
    for (const [id, page] of pageOf(ids, planArchivePages(ids))) byPage.set(page, [...(byPage.get(page) ?? []), id]);
    return byPage;
  };
  const [a, b] = [members(before), members(after)];
  return [...new Set([...a.keys(), ...b.keys()])].filter((page) => JSON.stringify(a.get(page)) !== JSON.stringify(b.get(page))).sort((x, y) => x - y);
}

const SEQUENTIAL = Array.from({ length: 5000 }, (_, i) => i + 1);

describe('archive pages', () => {
  it('hold every row once, in order, each page numbered by its newest row', () => {
    const plan = planArchivePages(SEQUENTIAL);
    expect(plan.reduce((sum, p) => sum + p.rows, 0)).toBe(SEQUENTIAL.length);
    expect(new Set(plan.map((p) => p.number)).size).toBe(plan.length);
    let end = 0;
    for (const page of plan) {
      end += page.rows;
      expect(page.number).toBe(SEQUENTIAL[end - 1]);
    }
    expect(planArchivePages([])).toEqual([]);
  });

  it('change only the page holding a row that is removed, and renumber it when the row was its newest', () => {
    const plan = planArchivePages(SEQUENTIAL);
    const newestRows = new Set(plan.map((p) => p.number));
    // Each page's first row: it starts the page, unless the page is the first.
    const starters = new Set(plan.slice(1).map((p) => SEQUENTIAL[SEQUENTIAL.indexOf(p.number) - p.rows + 1]!));
    // A page cut at 400 rows, and the one the cut started: a removal there moves the cut.
    const cut = new Set(plan.flatMap((p, i) => (p.rows >= 400 ? [p.number, plan[i + 1]?.number ?? -1] : [])));
    expect(cut.size, 'some pages are cut').toBeGreaterThan(0);
    let [checked, renumbered] = [0, 0];
    for (let i = 0; i < SEQUENTIAL.length; i += 37) {
      const id = SEQUENTIAL[i]!;
      const page = pageOf(SEQUENTIAL, plan).get(id)!;
      const changed = changedPages(SEQUENTIAL, SEQUENTIAL.filter((x) => x !== id));
      if (cut.has(page)) {
        // The pages up to the next page an id starts, one of them under a new number.
        expect(changed.length, `removing ${id}`).toBeLessThanOrEqual(5);
      } else if (starters.has(id)) {
        // Its rows join the page before, under this page's number: the page before goes.
        expect(changed.length, `removing ${id}`).toBeLessThanOrEqual(2);
      } else if (newestRows.has(id)) {
        // The page's other rows, under the number of the newest of them.
        expect(changed, `removing ${id}`).toEqual([id - 1, id]);
        renumbered++;
      } else {
        expect(changed, `removing ${id}`).toEqual([page]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(renumbered, 'newest rows removed').toBeGreaterThan(0);
  });

  it('give a page a new number, or add one, when a row is appended: no number gains a row', () => {
    for (let n = 1000; n < 1400; n++) {
      const before = SEQUENTIAL.slice(0, n);
      const after = SEQUENTIAL.slice(0, n + 1);
      const changed = changedPages(before, after);
      const newest = planArchivePages(before).at(-1)!.number;
      // The newest page, under the new row's number (its old number gone), or a page of the new row alone.
      expect([[newest, SEQUENTIAL[n]], [SEQUENTIAL[n]]], `appending ${SEQUENTIAL[n]}`).toContainEqual(changed);
    }
  });

  it('are about 100 rows on average and never over 400, whether ids come one by one or in steps', () => {
    for (const step of [1, 2, 100, 1000, 2 ** 32]) {
      const ids = Array.from({ length: 20_000 }, (_, i) => (i + 1) * step);
      const plan = planArchivePages(ids);
      const mean = ids.length / plan.length;
      expect(mean, `ids in steps of ${step}`).toBeGreaterThan(70);
      expect(mean, `ids in steps of ${step}`).toBeLessThan(140);
      expect(Math.max(...plan.map((p) => p.rows)), `ids in steps of ${step}`).toBeLessThanOrEqual(400);
    }
  });

  it('are never started by an id that is not a positive safe integer, nor numbered by one', () => {
    const odd = [0, -5, 2 ** 53 + 2, 1.5, Number.NaN];
    const ids = Array.from({ length: 2000 }, (_, i) => odd[i % odd.length]!);
    expect(planArchivePages(ids)).toEqual([{ number: 0, rows: 2000 }]);
    // Among usable ids they only make pages longer: a page still ends at 400 rows at the next usable id.
    const mixed = Array.from({ length: 2000 }, (_, i) => (i % 2 === 0 ? 0 : i));
    for (const page of planArchivePages(mixed)) expect(page.rows).toBeLessThanOrEqual(401);
    // A page is numbered by its newest row with a usable id: one without leaves the number as it was.
    const tail = [...SEQUENTIAL.slice(0, 1000), 0];
    expect(planArchivePages(tail).map((p) => p.number)).toEqual(planArchivePages(SEQUENTIAL.slice(0, 1000)).map((p) => p.number));
    expect(planArchivePages(tail).at(-1)!.rows).toBe(planArchivePages(SEQUENTIAL.slice(0, 1000)).at(-1)!.rows + 1);
  });

  it('are numbered only as the URL scheme routes, for ids up to 2^53 - 1', () => {
    // A page is numbered by a row id, and ids go up to 2^53 - 1 (docs/database.md): ids past 10^10
    // (pages 10000000207, 10000000482, ...) and the last ids below 2^53 give pages of 11 and 16
    // digits, which the route table (and so serve, the manifest, check and deploy) must answer.
    const routes = routesOf(FORMATS);
    const lists = [Array.from({ length: 600 }, (_, i) => 10_000_000_000 + i), Array.from({ length: 2000 }, (_, i) => Number.MAX_SAFE_INTEGER - 1999 + i)];
    for (const ids of lists) {
      const plan = planArchivePages(ids);
      expect(plan.length).toBeGreaterThan(1);
      for (const { number } of plan) {
        const file = keyedFile(RSS_ARCHIVE_PLACE, 'alice', number);
        expect(matchFile(routes, file), file).toMatchObject({ kind: 'keyed', key: 'alice', page: number });
      }
    }
  });
});

/**
 * A model of a user's list across many builds, and of a subscriber that follows RFC 5005 section
 * 4.2: at each reading it takes the feed (the 20 newest rows), walks the pages from the newest
 * and stops at the first whose number it has read before. Rows are uploaded (ids in order), taken
 * from the feed, or taken from anywhere (deleted or made private), and the subscriber reads now
 * and then; at the end it must have met every row that is left.
 */
const FEED_ROWS = 20;

/** A generator of numbers in [0, 1) from a seed, the same for the same seed. */
function seeded(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
}

/** Pages of a list as a subscriber sees them: a number and its rows, oldest first. */
type Numbering = (archived: readonly number[]) => Array<{ number: number; rows: readonly number[] }>;

const byNewestRow: Numbering = (archived) => {
  let start = 0;
  return planArchivePages(archived).map(({ number, rows }) => ({ number, rows: archived.slice(start, (start += rows)) }));
};

/** The numbering before this one, each page by the row that starts it: the model must catch what it misses. */
const byStartingRow: Numbering = (archived) => byNewestRow(archived).map(({ rows }) => ({ number: rows[0]!, rows }));

/** How many rows left at the end the subscriber never met, in one run of 3,000 changes. */
function missedRows(numbering: Numbering, seed: number): number {
  const random = seeded(seed);
  const live = Array.from({ length: 500 }, (_, i) => i + 1);
  let next = live.length + 1;
  const read = new Set<number>();
  const met = new Set<number>();
  const reading = () => {
    const archived = live.slice(0, Math.max(0, live.length - FEED_ROWS));
    for (const id of live.slice(-FEED_ROWS)) met.add(id);
    for (const page of numbering(archived).reverse()) {
      if (read.has(page.number)) break;
      read.add(page.number);
      for (const id of page.rows) met.add(id);
    }
  };
  reading();
  for (let step = 0; step < 3000; step++) {
    const change = random();
    if (change < 0.9) live.push(next++);
    else if (change < 0.95) live.splice(live.length - 1 - Math.floor(random() * FEED_ROWS), 1);
    else live.splice(Math.floor(random() * live.length), 1);
    if (random() < 1 / 30) reading();
  }
  reading();
  return live.filter((id) => !met.has(id)).length;
}

describe('archive page numbers, read by an RFC 5005 subscriber that stops at a page it has read', () => {
  it('lose no row across uploads, deletions from the feed and deletions from anywhere', () => {
    const runs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(runs.filter((seed) => missedRows(byNewestRow, seed) > 0)).toEqual([]);
    // The model has teeth: numbered by the row that starts them, the pages lose rows in most runs.
    expect(runs.filter((seed) => missedRows(byStartingRow, seed) > 0).length).toBeGreaterThan(50);
  });
});
