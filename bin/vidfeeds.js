#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// `vidfeeds build` starts its build thread first, so the thread loads the build's modules while
// this one loads the command line's (src/cli/build-thread.ts, prestartBuildThread).
import { prestartBuildThread } from '../dist/cli/build-thread.js';

if (process.argv[2] === 'build') prestartBuildThread();
const { main } = await import('../dist/cli/main.js');
process.exitCode = await main(process.argv);
