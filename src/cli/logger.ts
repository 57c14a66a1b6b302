import { escapedUnshowable } from '../config/shown-text.js';

/**
 * The lines vidfeeds writes to stderr: warnings, summaries, errors, and `serve`'s access log.
 * Two forms, one line per event either way:
 *
 * - `text` (the default): `vidfeeds: <message>`, for people and for cron's mail. The long-running
 *   commands (`watch`, `serve`) start each line with its time, ISO 8601 in UTC
 *   (`2026-11-26T05:50:01.123Z vidfeeds: …`), since their lines are read long after they happen.
 * - `json`: one JSON object per line, `{"time":"…Z","level":"info","msg":"…", …fields}`, for log
 *   collectors (journald's JSON, Loki, Elasticsearch). Every line carries `time` and `level`;
 *   events with data (a build's counts, a request) carry it as fields, not only in `msg`.
 *
 * Lines below the level (`error` < `warn` < `info` < `debug`) are not written. Each line is one
 * synchronous write, so lines never interleave and none is lost when the process exits.
 *
 * A text line is written with its unshowable characters escaped (src/config/shown-text.ts): a
 * message quotes values from the site's database, files and requests, and a C1 control (an 8-bit
 * CSI), a bidirectional override or a line separator in one, which JSON's quoting leaves as it is,
 * would act on the operator's terminal or show the line in another order than it was written.
 */

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export type LogFields = Record<string, unknown>;

export interface LogSettings {
  level?: LogLevel;
  format?: LogFormat;
}

export class Logger {
  private level: LogLevel = 'info';
  private format: LogFormat = 'text';
  private timestamps = false;
  private readonly fromFlags = new Set<keyof LogSettings>();

  constructor(
    private readonly write: (line: string) => void,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The flags' settings, which win over the configuration's. */
  useFlags(settings: LogSettings): void {
    this.apply(settings);
    for (const key of Object.keys(settings) as Array<keyof LogSettings>) if (settings[key] !== undefined) this.fromFlags.add(key);
  }

  /** The configuration's settings, for what no flag set. */
  useConfig(settings: LogSettings): void {
    this.apply({
      level: this.fromFlags.has('level') ? undefined : settings.level,
      format: this.fromFlags.has('format') ? undefined : settings.format,
    });
  }

  /** Every text line from now on starts with its time (watch, serve). */
  withTimes(): void {
    this.timestamps = true;
  }

  get json(): boolean {
    return this.format === 'json';
  }

  enabled(level: LogLevel): boolean {
    return LOG_LEVELS.indexOf(level) <= LOG_LEVELS.indexOf(this.level);
  }

  error(message: string, fields?: LogFields): void {
    this.line('error', message, fields);
  }

  warn(message: string, fields?: LogFields): void {
    this.line('warn', message, fields);
  }

  info(message: string, fields?: LogFields): void {
    this.line('info', message, fields);
  }

  debug(message: string, fields?: LogFields): void {
    this.line('debug', message, fields);
  }

  private apply(settings: LogSettings): void {
    if (settings.level !== undefined) this.level = settings.level;
    if (settings.format !== undefined) this.format = settings.format;
  }

  private line(level: LogLevel, message: string, fields: LogFields | undefined): void {
    if (!this.enabled(level)) return;
    if (this.format === 'json') {
      this.write(JSON.stringify({ time: this.now().toISOString(), level, msg: message, ...fields }));
      return;
    }
    // A message of several lines (every problem of a configuration) stays together, indented.
    const text = `vidfeeds: ${escapedUnshowable(message)}`;
    this.write(this.timestamps ? `${this.now().toISOString()} ${text}` : text);
  }
}
