import type { Command } from 'commander';
import { FORMATS } from '../../formats/registry.js';
import { EXIT } from '../errors.js';
import type { Console } from '../output.js';
import { exitCodesHelp } from './shared-options.js';
import { filePattern, urlPattern } from '../../paths/url-scheme.js';

export function registerFormats(program: Command, io: Console, setExit: (code: number) => void): void {
  const command = program.command('formats');
  exitCodesHelp(command, { 0: 'listed', 2: 'bad flags' });
  command
    .description('list the documents vidfeeds publishes: name, URL, file and content type')
    .option('--json', 'print JSON')
    .action((flags: { json?: boolean }) => {
      const rows = FORMATS.map((f) => ({ name: f.name, scope: f.scope, url: f.served === false ? '(not served)' : urlPattern(f), file: filePattern(f), mediaType: f.mediaType, summary: f.summary }));
      if (flags.json) io.out(JSON.stringify(rows, null, 2));
      else for (const r of rows) io.out(`${r.name.padEnd(16)} ${r.url.padEnd(30)} ${r.file.padEnd(34)} ${r.mediaType}`);
      setExit(EXIT.ok);
    });
}
