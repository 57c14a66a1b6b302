import { describe, expect, it } from 'vitest';
import { Logger } from '../../src/cli/logger.js';

function lines(format: 'text' | 'json'): { log: Logger; written: string[] } {
  const written: string[] = [];
  const log = new Logger((line) => written.push(line), () => new Date('2026-12-01T00:00:00Z'));
  log.useFlags({ format });
  return { log, written };
}

describe('the logger', () => {
  // A title from the site's database, quoted by a message the way JSON quotes it: JSON leaves C1
  // controls, bidirectional overrides and line separators as they are.
  const title = 'Intro\u009b2J\u202eevil\u2028next\u200b';
  const message = `videos 7: title ${JSON.stringify(title)} is too long`;

  it('writes a text line with the characters a terminal would act on, or that reorder it, escaped', () => {
    const { log, written } = lines('text');
    log.warn(message);
    expect(written).toEqual(['vidfeeds: videos 7: title "Intro\\u009b2J\\u202eevil\\u2028next\\u200b" is too long']);
  });

  it('keeps the line breaks and tabs of a message of several lines, and a plain line as it is', () => {
    const { log, written } = lines('text');
    log.error('the configuration has 2 problems:\n\tsite.url: missing\n\tbuild.out: not a folder');
    log.info('built 12 documents: 10 written, 2 unchanged (ünïcödé names stay)');
    expect(written).toEqual([
      'vidfeeds: the configuration has 2 problems:\n\tsite.url: missing\n\tbuild.out: not a folder',
      'vidfeeds: built 12 documents: 10 written, 2 unchanged (ünïcödé names stay)',
    ]);
  });

  it('leaves the message of a JSON line to JSON, which a collector reads back as it was', () => {
    const { log, written } = lines('json');
    log.warn(message);
    expect(JSON.parse(written[0]!)).toEqual({ time: '2026-12-01T00:00:00.000Z', level: 'warn', msg: message });
  });
});
