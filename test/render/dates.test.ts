import { describe, expect, it } from 'vitest';
import { prng } from '../../src/db/demo-data.js';
import { rfc3339, rfc822, w3cDate } from '../../src/render/dates.js';

const DAY = 86_400_000;

/** The forms as JavaScript's own formatting writes them, for years 1000 to 9999 (four digits). */
function expected(date: Date) {
  const iso = date.toISOString();
  return { rfc822: date.toUTCString(), w3c: iso.slice(0, 10), rfc3339: `${iso.slice(0, 19)}Z` };
}

function formatted(date: Date) {
  return { rfc822: rfc822(date), w3c: w3cDate(date), rfc3339: rfc3339(date) };
}

describe('dates as text', () => {
  it('writes what Date writes, for dates met in any order, again and again', () => {
    const next = prng(17);
    // Years 1000 to 9999, before and after 1970; each date formatted twice (the second from what was kept).
    const dates = Array.from({ length: 5000 }, () => new Date(Math.floor(-30610224000000 + next() * (253402300799000 + 30610224000000))));
    for (const date of [...dates, ...dates]) expect(formatted(date), date.toISOString()).toEqual(expected(date));
  });

  it('tells apart days that share a place in what is kept, and the edges of a day', () => {
    const start = Date.UTC(2024, 1, 28, 23, 59, 59);
    for (let i = 0; i < 4096; i++) {
      // Days 1024 apart alternate; then the first and last millisecond of each.
      const day = start + ((i % 2) * 1024 + Math.floor(i / 2)) * DAY;
      for (const time of [day, day + 1000, Math.floor(day / DAY) * DAY, Math.floor(day / DAY) * DAY + DAY - 1]) {
        const date = new Date(time);
        expect(formatted(date), date.toISOString()).toEqual(expected(date));
      }
    }
  });

  it('pads years before 1000 to four digits in the W3C and RFC 3339 forms', () => {
    const date = new Date(Date.UTC(999, 11, 31, 23, 59, 59));
    expect(w3cDate(date)).toBe('0999-12-31');
    expect(rfc3339(date)).toBe('0999-12-31T23:59:59Z');
    expect(rfc822(date)).toBe('Tue, 31 Dec 999 23:59:59 GMT');
    expect(rfc822(new Date(Date.UTC(1969, 11, 31, 23, 59, 59)))).toBe('Wed, 31 Dec 1969 23:59:59 GMT');
  });
});
