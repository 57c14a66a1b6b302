import { mf2 } from 'microformats-parser';

/**
 * Two independent readings of an hCard page with microformats-parser (npm): the microformats2
 * one, and the classic hCard one, which the parser applies only when a root has no `h-*` class.
 * For the classic reading every microformats2 class (`h-*`, `p-*`, `u-*`, `dt-*`, `e-*`) is taken
 * out first, so what is read comes from the classic classes alone.
 */

export type Mf2Item = { type: string[]; properties: Record<string, unknown[]>; value?: unknown };

export function withoutMf2Classes(html: string): string {
  return html.replace(/class="([^"]*)"/g, (_, classes: string) => {
    const kept = classes.split(/\s+/).filter((c) => c !== '' && !/^(h|p|u|dt|e)-/.test(c));
    return `class="${kept.join(' ')}"`;
  });
}

export function hcardReadings(html: string, baseUrl: string): { mf2: Mf2Item[]; classic: Mf2Item[] } {
  return {
    mf2: mf2(html, { baseUrl }).items as Mf2Item[],
    classic: mf2(withoutMf2Classes(html), { baseUrl }).items as Mf2Item[],
  };
}
