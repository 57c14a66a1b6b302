#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// The heap's bound is set before anything else runs (src/cli/heap-growth.ts).
const { boundHeapGrowth } = await import('../dist/cli/heap-growth.js');
boundHeapGrowth();
const { main } = await import('../dist/cli/main.js');
process.exitCode = await main(process.argv);
