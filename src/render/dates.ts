/** The only place dates become text. Every function formats in UTC. */

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function pad(n: number, width = 2): string {
  // Every field but the year, without padStart's generic path (two dates an RSS item).
  if (width === 2 && n >= 0 && n < 100) return n < 10 ? `0${n}` : `${n}`;
  return String(n).padStart(width, '0');
}

/** RFC 822 (as updated by RFC 1123), as RSS 2.0 and OPML 2.0 require: `Sat, 07 Sep 2002 09:42:31 GMT`. */
export function rfc822(date: Date): string {
  return `${dayOf(date).rfc822} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} GMT`;
}

/** RFC 3339 in UTC without fractions: `2002-09-07T09:42:31Z` (Atom, APML, sitemaps). */
export function rfc3339(date: Date): string {
  return `${w3cDate(date)}T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}Z`;
}

/** W3C date (a day): `2002-09-07`. */
export function w3cDate(date: Date): string {
  return dayOf(date).w3c;
}

/** A day's own text in each form, kept for the days met lately (see dayOf). */
interface DayText {
  day: number;
  /** `2002-09-07` */
  w3c: string;
  /** `Sat, 07 Sep 2002` */
  rfc822: string;
}

const MS_PER_DAY = 86_400_000;
/** Days kept, by day number modulo this: a feed's items fall on a few dozen days. */
const DAYS_KEPT = 1024;
const days: Array<DayText | undefined> = new Array(DAYS_KEPT);

/**
 * The text of `date`'s day (UTC), made once for each day met lately. An RSS item writes its
 * date twice (pubDate, and the day in its description), and a feed-heavy build a million items,
 * most of them on days met before: the day's text is the larger part of formatting a date.
 */
function dayOf(date: Date): DayText {
  const day = Math.floor(date.getTime() / MS_PER_DAY);
  const slot = ((day % DAYS_KEPT) + DAYS_KEPT) % DAYS_KEPT;
  const kept = days[slot];
  if (kept !== undefined && kept.day === day) return kept;
  const year = date.getUTCFullYear();
  const made: DayText = {
    day,
    w3c: `${pad(year, 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}`,
    rfc822: `${DAYS[date.getUTCDay()]}, ${pad(date.getUTCDate())} ${MONTHS[date.getUTCMonth()]} ${year}`,
  };
  days[slot] = made;
  return made;
}

/** A duration as the seed writes it: `mm:ss`, minutes unbounded (`125:07` for over two hours). */
export function minutesSeconds(totalSeconds: number): string {
  const whole = Math.max(0, Math.floor(totalSeconds));
  return `${pad(Math.floor(whole / 60))}:${pad(whole % 60)}`;
}

/** Unix seconds to a Date. */
export function fromUnix(seconds: number): Date {
  return new Date(seconds * 1000);
}

/** The latest of some dates, or `fallback` when there are none. */
export function latest(dates: Iterable<Date>, fallback: Date): Date {
  let best: Date | null = null;
  for (const date of dates) if (best === null || date.getTime() > best.getTime()) best = date;
  return best ?? fallback;
}

/** The earliest of some dates, or `fallback` when there are none. */
export function earliest(dates: Iterable<Date>, fallback: Date): Date {
  let best: Date | null = null;
  for (const date of dates) if (best === null || date.getTime() < best.getTime()) best = date;
  return best ?? fallback;
}
