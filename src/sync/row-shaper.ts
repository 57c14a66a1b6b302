import { quoted } from '../config/shown-text.js';
import { segmentProblem } from '../paths/names.js';
import type { SourceRow } from './key-groups.js';
import { looksLikeMojibake } from './mojibake.js';
import { shapeRow, type ShapedRow } from './source-row.js';
import type { TablePlan } from './table-plan.js';

/**
 * A source row made into the values vidfeeds stores (src/sync/source-row.ts), or the reason it
 * cannot be stored, with the table's own rules on top: a user whose name cannot be a path is not
 * stored, and text that looks like UTF-8 read as latin1 is named.
 */

/** Hears of a text value that looks like UTF-8 read as latin1 (src/sync/mojibake.ts). */
export type MojibakeHook = (table: string, column: string, row: string, found: string) => void;

export class RowShaper {
  /** Where a users row holds its username, which must be able to be a path; -1 in other tables. */
  private readonly username: number;

  constructor(
    private readonly plan: TablePlan,
    private readonly mojibake?: MojibakeHook,
  ) {
    this.username = plan.table === 'users' ? plan.columns.indexOf('username') : -1;
  }

  /** Why a row cannot be stored, or null; it names nothing (src/sync/key-groups.ts chooses the row of a key by it). */
  problem(row: SourceRow): string | null {
    const shaped = shapeRow(this.plan, row.raw, () => row.name());
    return 'skipped' in shaped ? shaped.skipped : this.unpublishableName(shaped.values);
  }

  /** The row's values, or why it cannot be stored; text that looks like mojibake is named. */
  shape(row: SourceRow): ShapedRow {
    const shaped = shapeRow(this.plan, row.raw, () => row.name());
    if ('skipped' in shaped) return shaped;
    if (this.mojibake !== undefined) this.checkText(row, shaped.values);
    const unpublishable = this.unpublishableName(shaped.values);
    return unpublishable === null ? shaped : { skipped: unpublishable };
  }

  /**
   * A user whose name cannot be a path has no documents of their own; stored, their videos and
   * their friends' links to them would be published, pointing at pages that do not exist. Such a
   * user is not stored, so that everything of theirs follows the same rule (docs/adopting.md).
   */
  private unpublishableName(values: readonly unknown[]): string | null {
    const name = this.username < 0 ? undefined : values[this.username];
    if (typeof name !== 'string') return null;
    const problem = segmentProblem(name, () => false);
    return problem === null ? null : `username ${quoted(name)} cannot be a path (it ${problem}): the user is not published, nor their videos or links to them`;
  }

  /** Names each text the source gave that looks like UTF-8 read as latin1. */
  private checkText(row: SourceRow, values: readonly unknown[]): void {
    for (let i = this.plan.keys.length; i < values.length; i++) {
      const value = values[i];
      if (typeof value === 'string' && typeof row.raw[this.plan.columns[i]!] === 'string' && looksLikeMojibake(value)) {
        this.mojibake!(this.plan.table, this.plan.columns[i]!, row.name(), value);
      }
    }
  }
}
