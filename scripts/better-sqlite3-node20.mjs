#!/usr/bin/env node
// Runs after `npm install` / `npm ci` (package.json "postinstall"). See docs/performance.md,
// "Feed-heavy, twelfth session".
//
// better-sqlite3 12 builds each row it returns in one of two ways, chosen when it is compiled: for
// Node 22 and later (NODE_MODULE_VERSION 127) with one v8::Array::New or v8::Object::New per row,
// for Node 20 with an empty array or object and one Set call per value, each a trip through V8's
// generic property store. On a feed-heavy site reading a user's 20 uploads took 45 µs the Node 20
// way and 28 µs the Node 22 way, and a full build spent about a tenth of its CPU there.
//
// This script makes a better-sqlite3 compiled here for Node 20 take the Node 22 path: it lifts
// the three version gates and stands a std::vector of handles in for v8::LocalVector, which V8 11
// lacks (with Node 20's indirect handles a Local may be kept anywhere while its scope lives), then
// recompiles the package in place (`node-gyp build`, which rebuilds SQLite with it). It touches only better-sqlite3 12.11.1 (the
// pinned version) compiled from source: a prebuilt binary, or a machine with no compiler, keeps the
// package as published, which is correct and only slower. It never fails the install.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const VERSION = '12.11.1';
const MARK = '// vidfeeds: rows built as for Node 22';
const NODE22_GATE_ON = '#if defined(NODE_MODULE_VERSION) && NODE_MODULE_VERSION >= 127';
const NODE20_GATE = '#if !defined(NODE_MODULE_VERSION) || NODE_MODULE_VERSION < 127';

/** The edits, by file inside the package: each replaces every occurrence of `from` (there must be `count`). */
export const EDITS = [
  {
    file: 'src/better_sqlite3.cpp',
    count: 1,
    from: `#include "util/data.cpp"\n${NODE22_GATE_ON}\n#include "util/row-builder.cpp"\n#endif\n`,
    to:
      `${MARK} (scripts/better-sqlite3-node20.mjs).\n` +
      '#if defined(NODE_MODULE_VERSION) && NODE_MODULE_VERSION < 127\n' +
      'namespace v8 {\n' +
      'template <class T> struct LocalVector : std::vector<Local<T>> { explicit LocalVector(Isolate*) {} };\n' +
      '}\n' +
      '#endif\n' +
      '#include "util/data.cpp"\n#include "util/row-builder.cpp"\n',
  },
  { file: 'src/util/data.cpp', count: 1, from: NODE20_GATE, to: `#if !defined(NODE_MODULE_VERSION) ${MARK}` },
  { file: 'src/objects/statement.cpp', count: 2, from: NODE20_GATE, to: `#if !defined(NODE_MODULE_VERSION) ${MARK}` },
];

/**
 * The patched sources, or why not: 'patched' when every file is already patched, 'unknown' when
 * a file holds neither the expected text nor the patch (then nothing is written).
 */
export function patchSources(read) {
  const texts = new Map();
  let applied = 0;
  for (const { file, count, from, to } of EDITS) {
    const text = texts.get(file) ?? read(file);
    const found = text.split(from).length - 1;
    if (found === count) {
      texts.set(file, text.split(from).join(to));
      applied++;
    } else if (found === 0 && text.includes(MARK)) {
      texts.set(file, text);
    } else {
      return { state: 'unknown', file };
    }
  }
  return applied === 0 ? { state: 'patched' } : { state: 'changed', texts };
}

function main() {
  const say = (text) => process.stdout.write(`vidfeeds postinstall: ${text}\n`);
  if (Number(process.versions.modules) >= 127) return; // the package already builds rows this way
  let root;
  try {
    root = dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json'));
  } catch {
    return say('better-sqlite3 is not installed; nothing to patch');
  }
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  if (version !== VERSION) return say(`better-sqlite3 ${version} is not ${VERSION}; left as published`);
  if (!existsSync(join(root, 'build', 'Makefile'))) {
    return say('better-sqlite3 came prebuilt; left as published (rows are built more slowly on Node 20)');
  }
  const done = join(root, 'build', 'Release', '.vidfeeds-node22-rows');
  const patch = patchSources((file) => readFileSync(join(root, file), 'utf8'));
  if (patch.state === 'unknown') return say(`${patch.file} is not as expected; better-sqlite3 left as published`);
  if (patch.state === 'patched' && existsSync(done)) return;
  const originals = new Map();
  if (patch.state === 'changed') {
    for (const [file, text] of patch.texts) {
      originals.set(file, readFileSync(join(root, file), 'utf8'));
      writeFileSync(join(root, file), text);
    }
  }
  // npm gives install scripts the path of its own node-gyp; outside npm, one on the PATH.
  const gyp = process.env.npm_config_node_gyp;
  const [command, args] = gyp ? [process.execPath, [gyp]] : ['node-gyp', []];
  say('recompiling better-sqlite3 to build rows as on Node 22 (under a minute)');
  // The compiler's warnings (the package's own, as when npm built it) are shown only if it fails.
  const built = spawnSync(command, [...args, 'build', '--release'], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (built.status === 0) {
    writeFileSync(done, `${VERSION}\n`);
    return say('better-sqlite3 recompiled');
  }
  process.stderr.write(`${(built.stderr ?? '').split('\n').slice(-40).join('\n')}\n`);
  for (const [file, text] of originals) writeFileSync(join(root, file), text);
  say(`recompiling better-sqlite3 failed (${built.error?.message ?? `exit ${built.status}`}); sources restored`);
  // The failed compile stopped before linking, so the binary in place is the one npm built.
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
