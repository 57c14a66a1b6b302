import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';


const DOCS = join(import.meta.dirname, '../../docs');
const UNITS = ['vidfeeds-build.service', 'vidfeeds-build.timer', 'vidfeeds-watch.service', 'vidfeeds-serve.service'];
const SERVICES = UNITS.filter((unit) => unit.endsWith('.service'));

const analyzer = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
const hasAnalyzer = analyzer.error === undefined && analyzer.status === 0;
if (!hasAnalyzer) console.warn('skipped: systemd-analyze is not installed (Debian package systemd; .ci/run installs it)');

/** `systemd-analyze verify` on copies of the units, with ExecStart pointing at the built vidfeeds (verify checks that it exists). */
function verify(edit: (service: string) => string = (s) => s, unit = 'vidfeeds-build.service'): { status: number | null; output: string } {
  const { dir } = tempDir('vidfeeds-systemd-');
  for (const unit of UNITS) copyFileSync(join(DOCS, 'systemd', unit), join(dir, unit));
  for (const name of SERVICES) {
    const service = join(dir, name);
    const text = readFileSync(service, 'utf8').replaceAll('/usr/local/bin/vidfeeds ', `${BIN} `);
    writeFileSync(service, name === unit ? edit(text) : text);
  }
  const result = spawnSync('systemd-analyze', ['verify', ...UNITS.map((u) => join(dir, u))], { encoding: 'utf8', env: { ...process.env, SYSTEMD_LOG_COLOR: '0' } });
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

describe.skipIf(!hasAnalyzer)('the systemd service and timer of docs/operations.md', () => {
  it('pass systemd-analyze verify without a warning', () => {
    const result = verify();
    expect(result.output).toBe('');
    expect(result.status).toBe(0);
  });

  it('pass with the drop-in that syncs before the build', () => {
    const dropIn = readFileSync(join(DOCS, 'systemd', 'vidfeeds-build.service.d', 'sync.conf'), 'utf8').replaceAll('/usr/local/bin/vidfeeds ', `${BIN} `);
    const result = verify((service) => {
      // The drop-in's settings, applied as systemd applies them: an empty ExecStart= clears the list.
      const kept = service.split('\n').filter((line) => !/^(ExecStart|PrivateNetwork|ReadWritePaths)=/.test(line));
      const added = dropIn.split('\n').filter((line) => /^\w+=./.test(line));
      return [...kept, ...added].join('\n');
    });
    expect(result.output).toBe('');
    expect(result.status).toBe(0);
    expect(dropIn).toMatch(/^ExecStart=\n.*vidfeeds(\.js)? sync .*\n.*vidfeeds(\.js)? build /m);
  });

  it('would be caught if broken (the check can fail)', () => {
    const misspelt = verify((s) => s.replace('StateDirectory=', 'StateDirectry='));
    expect(misspelt.output).toContain("Unknown key 'StateDirectry'");
    const missing = verify((s) => s.replace('ExecStart=/bin/sh ', 'ExecStart=/nonexistent/sh '));
    expect(missing.status).not.toBe(0);
    for (const unit of SERVICES.filter((name) => name !== 'vidfeeds-build.service')) {
      const missing = verify((s) => s.replace(`${BIN} `, '/nonexistent/vidfeeds '), unit);
      expect(missing.status, unit).not.toBe(0);
    }
    for (const unit of ['vidfeeds-watch.service', 'vidfeeds-serve.service']) {
      expect(verify((s) => s.replace('RestartPreventExitStatus=', 'RestartPreventExitStatu='), unit).output, unit).toContain("Unknown key 'RestartPreventExitStatu'");
    }
  });

  it('run watch and serve as daemons: the installed binary, sandboxed, as a dedicated user, never restarted over a bad configuration', () => {
    for (const unit of ['vidfeeds-watch.service', 'vidfeeds-serve.service']) {
      const text = readFileSync(join(DOCS, 'systemd', unit), 'utf8');
      const command = unit.includes('watch') ? 'watch' : 'serve';
      expect(text, unit).toMatch(new RegExp(`^ExecStart=/usr/local/bin/vidfeeds ${command} `, 'm'));
      for (const line of [/^User=vidfeeds$/m, /^NoNewPrivileges=yes$/m, /^ProtectSystem=strict$/m, /^ReadWritePaths=\/srv\//m, /^Restart=on-failure$/m, /^RestartPreventExitStatus=2$/m]) {
        expect(text, unit).toMatch(line);
      }
    }
    // serve listens (nginx's upstream); watch needs no network at all.
    expect(readFileSync(join(DOCS, 'systemd', 'vidfeeds-watch.service'), 'utf8')).toMatch(/^PrivateNetwork=yes$/m);
    expect(readFileSync(join(DOCS, 'systemd', 'vidfeeds-serve.service'), 'utf8')).toMatch(/^ExecStart=.* --host 127\.0\.0\.1 /m);
  });

  it('run a build a wrapper can act on: SIGTERM has time to finish cleanly', () => {
    const service = readFileSync(join(DOCS, 'systemd', 'vidfeeds-build.service'), 'utf8');
    expect(service).toMatch(/^ExecStart=\/bin\/sh -c '\/usr\/local\/bin\/vidfeeds build .*--wait \d+;/m);
    expect(service).toMatch(/^Type=oneshot$/m);
    expect(service).toMatch(/^StateDirectory=vidfeeds-build$/m);
    expect(readFileSync(join(DOCS, 'systemd', 'vidfeeds-build.timer'), 'utf8')).toMatch(/^Persistent=true$/m);
  });
});

/**
 * The unit's ExecStart run as systemd runs it: `$$` unescaped to `$`, STATE_DIRECTORY set, and a
 * stand-in for vidfeeds that exits with each code in turn.
 */
describe('the systemd service\'s exit codes', () => {
  const service = readFileSync(join(DOCS, 'systemd', 'vidfeeds-build.service'), 'utf8');
  const script = /^ExecStart=\/bin\/sh -c '(.*)'$/m.exec(service)![1]!.replaceAll('$$', '$');

  function runs(codes: number[]): Array<{ status: number | null; stderr: string }> {
    const { dir } = tempDir('vidfeeds-unit-');
    const stub = join(dir, 'vidfeeds');
    return codes.map((code) => {
      writeFileSync(stub, `#!/bin/sh\nexit ${code}\n`);
      chmodSync(stub, 0o755);
      const result = spawnSync('/bin/sh', ['-c', script.replace('/usr/local/bin/vidfeeds ', `${stub} `)], { encoding: 'utf8', env: { PATH: process.env.PATH, STATE_DIRECTORY: dir } });
      return { status: result.status, stderr: result.stderr };
    });
  }

  it('is a success when the lock was held once, and a failure when it is held again on the next run', () => {
    const [first, second, third, built, again] = runs([75, 75, 75, 0, 75]);
    expect(first!.status).toBe(0);
    expect(second!.status).toBe(75);
    expect(second!.stderr).toBe('vidfeeds: nothing published for 2 runs in a row: the lock is held (see above)\n');
    expect(third!.status).toBe(75);
    expect(built!.status).toBe(0);
    // A build in between starts the count again.
    expect(again!.status).toBe(0);
  });

  it('keeps vidfeeds\'s own exit codes otherwise', () => {
    expect(runs([0, 1, 2, 143]).map((r) => r.status)).toEqual([0, 1, 2, 143]);
  });
});

/**
 * The cron wrapper of docs/operations.md, run against a stand-in for `vidfeeds build --json` that
 * prints a report of the documented shape (docs/schemas/report.schema.json) and exits with a code.
 */
function nightly(exitCode: number, report: object, env: Record<string, string> = {}, dir = tempDir('vidfeeds-cron-').dir): { status: number | null; stdout: string; log: string; purge: string | null; args: string } {
  const stub = join(dir, 'vidfeeds');
  writeFileSync(join(dir, 'report.json'), JSON.stringify(report));
  writeFileSync(stub, `#!/bin/sh\necho "$@" >> "${dir}/args"\ncat "${dir}/report.json"\necho "vidfeeds: a line on stderr" >&2\nexit ${exitCode}\n`);
  chmodSync(stub, 0o755);
  const result = spawnSync(join(DOCS, 'cron', 'vidfeeds-nightly'), [], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, VIDFEEDS: stub, VIDFEEDS_LOG: dir, VIDFEEDS_DB: '/d/site.sqlite', VIDFEEDS_OUT: '/d/out', VIDFEEDS_CONFIG: '/d/c.json', ...env },
  });
  expect(result.stderr).toBe('');
  const purge = join(dir, 'purge.txt');
  return {
    status: result.status,
    stdout: result.stdout,
    log: readFileSync(join(dir, 'build.log'), 'utf8'),
    purge: existsSync(purge) ? readFileSync(purge, 'utf8') : null,
    args: readFileSync(join(dir, 'args'), 'utf8').trim(),
  };
}

const BUILT = {
  report: 1,
  command: 'build',
  ok: true,
  exitCode: 0,
  mode: 'incremental',
  counts: { documents: 12, written: 2, unchanged: 10, removed: 1, skipped: 0, failed: 0, bytesWritten: 900 },
  skipped: [],
  failed: [],
  urls: { written: ['https://videos.example.org/alice/rss/', 'https://videos.example.org/sitemap.xml'], removed: ['https://videos.example.org/v1/oembed/'] },
};

const hasJq = spawnSync('jq', ['--version']).status === 0;
if (!hasJq) console.warn('skipped: jq is not installed (.ci/run installs it)');

describe.skipIf(!hasJq)('the cron wrapper of docs/operations.md', () => {
  it('is silent on success, logs one line and lists the URLs to purge', () => {
    const run = nightly(0, BUILT);
    expect(run.status).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.args).toBe('build --json --wait 600 --db /d/site.sqlite --out /d/out --config /d/c.json');
    expect(run.log).toMatch(/^vidfeeds: a line on stderr\n\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ exit 0: incremental build: 2 written, 1 removed, 0 skipped, 0 failed\n$/);
    expect(run.purge).toBe('https://videos.example.org/alice/rss/\nhttps://videos.example.org/sitemap.xml\nhttps://videos.example.org/v1/oembed/\n');
  });

  it('names the failed documents (for cron to mail) and still purges what was written', () => {
    const failed = { ...BUILT, ok: false, exitCode: 1, counts: { ...BUILT.counts, failed: 1 }, failed: [{ format: 'rss', key: 'bob', path: 'bob/rss/index.rss', url: 'https://videos.example.org/bob/rss/', message: 'template error' }] };
    const run = nightly(1, failed);
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('vidfeeds: documents failed and keep their earlier file:\n  bob/rss/index.rss: template error\n');
    expect(run.purge).toContain('/alice/rss/');
  });

  it('reports a configuration or database error, and skips quietly when another build holds the lock', () => {
    const bad = nightly(2, { report: 1, command: 'build', ok: false, exitCode: 2, error: 'configuration /d/c.json:3:14: baseUrl must use http or https, not ftp:' });
    expect(bad.status).toBe(2);
    expect(bad.stdout).toBe('vidfeeds: configuration /d/c.json:3:14: baseUrl must use http or https, not ftp: (nothing was written)\n');
    expect(bad.purge).toBeNull();
    const busy = nightly(75, { report: 1, command: 'build', ok: false, exitCode: 75, error: 'another build holds the lock' });
    expect(busy.status).toBe(0);
    expect(busy.stdout).toBe('');
    expect(busy.log).toContain('skipped: another build held the lock (1 runs in a row)');
    const stopped = nightly(143, { report: 1, command: 'build', ok: false, exitCode: 143, error: 'stopped by SIGTERM' });
    expect(stopped.status).toBe(143);
    expect(stopped.stdout).toContain('stopped with exit code 143');
  });

  it('with VIDFEEDS_SYNC=1, syncs before the build and stops before it when the sync fails', () => {
    const ok = nightly(0, { report: 1, command: 'build', ok: true, exitCode: 0, urls: { written: [], removed: [] } }, { VIDFEEDS_SYNC: '1' });
    expect(ok.status).toBe(0);
    expect(ok.args.split('\n')).toEqual([
      'sync --quiet --wait 600 --db /d/site.sqlite --config /d/c.json',
      'build --json --wait 600 --db /d/site.sqlite --out /d/out --config /d/c.json',
    ]);
    const bad = nightly(2, { report: 1, command: 'sync', ok: false, exitCode: 2, error: 'sync.tables.users: …' }, { VIDFEEDS_SYNC: '1' });
    expect(bad.status).toBe(2);
    expect(bad.stdout).toContain('the sync failed with exit code 2 (nothing was written)');
    expect(bad.args).toBe('sync --quiet --wait 600 --db /d/site.sqlite --config /d/c.json');
  });

  it('alerts when the lock is held on two runs in a row, and at once when vidfeeds calls the lock stale', () => {
    const { dir } = tempDir('vidfeeds-cron-');
    const held = { report: 1, command: 'build', ok: false, exitCode: 75, error: 'output directory /d/out is being built by another vidfeeds: "vidfeeds build", pid 7 on web1' };
    expect(nightly(75, held, {}, dir)).toMatchObject({ status: 0, stdout: '' });
    const second = nightly(75, held, {}, dir);
    expect(second.status).toBe(75);
    expect(second.stdout).toBe(`vidfeeds: nothing published for 2 runs in a row: ${held.error}\n`);
    expect(nightly(0, BUILT, {}, dir).status).toBe(0);
    expect(nightly(75, held, {}, dir)).toMatchObject({ status: 0, stdout: '' });
    const stale = nightly(0, BUILT, {}, dir) && nightly(75, { ...held, error: 'STALE LOCK: output directory /d/out has been locked for 7 h' }, {}, dir);
    expect(stale.status).toBe(75);
    expect(stale.stdout).toBe('vidfeeds: nothing published for 1 runs in a row: STALE LOCK: output directory /d/out has been locked for 7 h\n');
  });
});
