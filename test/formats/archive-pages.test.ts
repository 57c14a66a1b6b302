import { describe, expect, it } from 'vitest';
import { planArchivePages, RSS_ARCHIVE_PLACE, type ArchivePagePlan } from '../../src/formats/archive-places.js';
import { FORMATS } from '../../src/formats/registry.js';
import { routesOf } from '../../src/hosting/routes.js';
import { keyedFile, matchFile } from '../../src/paths/url-scheme.js';

/**
 * Which archive page holds which row (planArchivePages): the promise is that a change to the
 * list touches the page holding the changed row and no other, and that pages stay of a bounded
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
  it('hold every row once, in order, numbered apart', () => {
    const plan = planArchivePages(SEQUENTIAL);
    expect(plan.reduce((sum, p) => sum + p.rows, 0)).toBe(SEQUENTIAL.length);
    expect(new Set(plan.map((p) => p.number)).size).toBe(plan.length);
    // A page other than the first is numbered by the id of the row that starts it.
    let first = 0;
    for (const page of plan) {
      if (first > 0 || page.number !== 0) expect(page.number).toBe(SEQUENTIAL[first]);
      first += page.rows;
    }
    expect(planArchivePages([])).toEqual([]);
  });

  it('change only the page holding a row that is removed, unless the row starts its page or its page was cut at 400 rows', () => {
    const plan = planArchivePages(SEQUENTIAL);
    const starters = new Set(plan.map((p) => p.number));
    // A page cut at 400 rows, and the one the cut started: a removal there moves the cut.
    const cut = new Set(plan.flatMap((p, i) => (p.rows >= 400 ? [p.number, plan[i + 1]?.number ?? -1] : [])));
    expect(cut.size, 'some pages are cut').toBeGreaterThan(0);
    let checked = 0;
    for (let i = 0; i < SEQUENTIAL.length; i += 37) {
      const id = SEQUENTIAL[i]!;
      const changed = changedPages(SEQUENTIAL, SEQUENTIAL.filter((x) => x !== id));
      if (cut.has(pageOf(SEQUENTIAL, plan).get(id)!)) {
        // The pages up to the next page an id starts.
        expect(changed.length, `removing ${id}`).toBeLessThanOrEqual(4);
      } else if (starters.has(id)) {
        // Its rows join the page before: that page changes and this one goes.
        expect(changed.length, `removing ${id}`).toBeLessThanOrEqual(2);
      } else {
        expect(changed, `removing ${id}`).toEqual([pageOf(SEQUENTIAL, plan).get(id)]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('change only the newest page, or add one, when a row is appended', () => {
    for (let n = 1000; n < 1400; n++) {
      const before = SEQUENTIAL.slice(0, n);
      const after = SEQUENTIAL.slice(0, n + 1);
      const changed = changedPages(before, after);
      const newest = planArchivePages(before).at(-1)!.number;
      expect([[newest], [SEQUENTIAL[n]]], `appending ${SEQUENTIAL[n]}`).toContainEqual(changed);
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
