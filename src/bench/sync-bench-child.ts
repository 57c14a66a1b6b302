import { readFileSync } from 'node:fs';
import { boundHeapGrowth } from '../cli/heap-growth.js';
import { openSource } from '../sync/open-source.js';
import { runSync } from '../sync/run-sync.js';
import { planTables, SYNC_ORDER, type TableMapping } from '../sync/table-plan.js';
import { openForReading } from '../db/open-database.js';

/**
 * One timed run of the sync bench, in a process of its own so that its peak RSS is its own:
 * `sync DB URL MAPPING` runs a sync (`sync-changed`: with --changed-only); `read DB URL MAPPING`
 * reads the same queries, in the same key order, through the driver alone and counts the rows: the
 * floor a sync is compared with.
 * Prints one `BENCH {...}` line: the run's seconds, its CPU seconds (user and system, the whole
 * process's) and its peak RSS.
 */
// As `bin/vidfeeds.js` does, for the sync and for the read it is compared with alike.
boundHeapGrowth();
const [mode, db, from, mappingFile] = process.argv.slice(2) as [string, string, string, string];
const tables = JSON.parse(readFileSync(mappingFile, 'utf8')) as Record<string, TableMapping>;
const started = performance.now();
let result: Record<string, unknown>;
if (mode === 'sync' || mode === 'sync-changed') {
  const report = await runSync({ db, from, tables, dryRun: false, changedOnly: mode === 'sync-changed', waitSeconds: 0 });
  const changed = Object.values(report.tables).filter((t) => t.mode === 'changed').length;
  result = { changes: report.changes, skipped: report.skipped, issues: report.issues, changedTables: changed };
} else {
  const source = await openSource(from);
  const target = openForReading(db);
  let rows = 0;
  try {
    for (const plan of await planTables(target, source, tables)) {
      for await (const batch of source.rows(plan.query, plan.keys)) rows += batch.length;
    }
  } finally {
    target.close();
    await source.close();
  }
  result = { rows, tables: SYNC_ORDER.filter((t) => tables[t] !== undefined).length };
}
const usage = process.resourceUsage();
console.log(`BENCH ${JSON.stringify({ ...result, seconds: (performance.now() - started) / 1000, cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6, maxRssKb: usage.maxRSS })}`);
