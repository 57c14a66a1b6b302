import { boundHeapGrowth } from '../cli/heap-growth.js';
import { main } from '../cli/main.js';

/**
 * Runs one vidfeeds command in this process, as `bin/vidfeeds.js` does (its heap bounded the same
 * way), then reports what it cost on the last line of stdout (`BENCH {json}`): the benchmark reads
 * the peak memory from there.
 * Usage: node dist/bench/child.js <vidfeeds arguments...>
 */
boundHeapGrowth();
const exitCode = await main(['node', 'vidfeeds', ...process.argv.slice(2)]);
const usage = process.resourceUsage();
process.stdout.write(`BENCH ${JSON.stringify({ exitCode, maxRssKb: usage.maxRSS, userMs: usage.userCPUTime / 1000, systemMs: usage.systemCPUTime / 1000 })}\n`);
process.exitCode = exitCode;
