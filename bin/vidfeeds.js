#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
const { main } = await import('../dist/cli/main.js');
process.exitCode = await main(process.argv);
