import { spawn } from 'node:child_process';

/**
 * Telling the world what changed, once the changed documents are live: WebSub hubs (the feeds
 * whose bytes changed), IndexNow (the URLs that changed or were removed) and the operator's own
 * command (`--on-change`, every changed or removed URL on its standard input, one per line: a CDN
 * purge). Each request is retried with back-off on 429, 5xx and network errors, honouring
 * `Retry-After`; a delivery that still fails is named, and the command exits 1.
 *
 * WebSub 1.0 leaves the publisher's notification to the hub open; every public hub takes the
 * PubSubHubbub form used here: a form-encoded POST of `hub.mode=publish` and one `hub.url` per
 * feed (several per request, `websub.feedsPerRequest`). IndexNow: a JSON POST of `host`, `key`,
 * `keyLocation` and `urlList`, at most 10,000 URLs each.
 */

export interface Changes {
  /** Public URLs of documents whose bytes changed (new ones included). */
  changed: readonly string[];
  /** Public URLs of documents that are gone. */
  removed: readonly string[];
  /** Of `changed`, the WebSub topics (RSS and Atom feeds). */
  feeds: readonly string[];
  /** Of `changed` and `removed`, the URLs search engines index (documents, not sitemaps or robots.txt). */
  indexable: readonly string[];
}

export interface NotifySettings {
  hubs: readonly string[];
  feedsPerRequest: number;
  indexNow: { key: string; endpoint: string; keyLocation: string; host: string } | null;
  /** A shell command run with the changed and removed URLs on its standard input. */
  onChange?: string;
}

export interface NotifyOptions {
  /** Tries per request, the first included. */
  maxTries?: number;
  /** The first back-off; each next one doubles. */
  backoffMs?: number;
  /** The longest wait for one retry, `Retry-After` included. */
  maxBackoffMs?: number;
  /** Where the hook's own output goes (stderr). */
  hookOutput?: (text: string) => void;
  userAgent?: string;
  /** A signal heard: the request under way is aborted, a hook is stopped, nothing more is sent. */
  stop?: AbortSignal;
}

export interface Delivery {
  to: string;
  what: string;
  ok: boolean;
  message?: string;
}

export const INDEXNOW_MAX_URLS = 10_000;

export function hasNothingToSay(changes: Changes): boolean {
  return changes.changed.length === 0 && changes.removed.length === 0;
}

/** Sends every notification the settings ask for; resolves with each delivery, none thrown. */
export async function notifyChanges(changes: Changes, settings: NotifySettings, options: NotifyOptions = {}): Promise<Delivery[]> {
  const deliveries: Delivery[] = [];
  if (hasNothingToSay(changes)) return deliveries;
  const feeds = [...new Set(changes.feeds)].sort();
  for (const hub of settings.hubs) {
    for (const batch of chunks(feeds, settings.feedsPerRequest)) {
      if (options.stop?.aborted === true) return deliveries;
      const body = new URLSearchParams([['hub.mode', 'publish'], ...batch.map((url): [string, string] => ['hub.url', url])]);
      deliveries.push(
        await post(hub, `WebSub publish of ${batch.length} ${batch.length === 1 ? 'feed' : 'feeds'}`, { 'content-type': 'application/x-www-form-urlencoded' }, body.toString(), options),
      );
    }
  }
  const indexNow = settings.indexNow;
  if (indexNow !== null) {
    const urls = [...new Set(changes.indexable)].sort();
    for (const batch of chunks(urls, INDEXNOW_MAX_URLS)) {
      if (options.stop?.aborted === true) return deliveries;
      const body = JSON.stringify({ host: indexNow.host, key: indexNow.key, keyLocation: indexNow.keyLocation, urlList: batch });
      deliveries.push(await post(indexNow.endpoint, `IndexNow submission of ${batch.length} URLs`, { 'content-type': 'application/json; charset=utf-8' }, body, options));
    }
  }
  if (settings.onChange !== undefined && options.stop?.aborted !== true) {
    const urls = [...new Set([...changes.changed, ...changes.removed])].sort();
    deliveries.push(await runHook(settings.onChange, urls, options.hookOutput ?? ((text) => process.stderr.write(text)), options.stop));
  }
  return deliveries;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

async function post(url: string, what: string, headers: Record<string, string>, body: string, options: NotifyOptions): Promise<Delivery> {
  const maxTries = options.maxTries ?? 5;
  let wait = options.backoffMs ?? 1000;
  const maxWait = options.maxBackoffMs ?? 60_000;
  let last = '';
  const { stop } = options;
  for (let attempt = 1; attempt <= maxTries; attempt++) {
    let retryAfter: number | null = null;
    try {
      const timeout = AbortSignal.timeout(30_000);
      const response = await fetch(url, {
        method: 'POST',
        headers: { ...headers, 'user-agent': options.userAgent ?? 'vidfeeds' },
        body,
        redirect: 'follow',
        signal: stop === undefined ? timeout : AbortSignal.any([timeout, stop]),
      });
      // The answer's body is never needed; reading it frees the connection.
      const text = await response.text().catch(() => '');
      if (response.ok) return { to: url, what, ok: true };
      last = `HTTP ${response.status}${text.trim() === '' ? '' : `: ${text.trim().slice(0, 200)}`}`;
      if (response.status !== 429 && response.status < 500) return { to: url, what, ok: false, message: last };
      retryAfter = retryAfterMs(response.headers.get('retry-after'));
    } catch (error) {
      last = (error as Error).message ?? String(error);
    }
    if (stop?.aborted === true) return { to: url, what, ok: false, message: 'not sent: stopped by a signal' };
    if (attempt === maxTries) break;
    await sleep(Math.min(retryAfter ?? wait, maxWait), stop);
    wait *= 2;
  }
  return { to: url, what, ok: false, message: `${last} (after ${maxTries} tries)` };
}

function retryAfterMs(value: string | null): number | null {
  if (value === null) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

/** Waits `ms`, or less when `stop` is aborted meanwhile. */
function sleep(ms: number, stop?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stop?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stop?.addEventListener('abort', done, { once: true });
  });
}


/** Runs the hook through the shell with the URLs on its standard input; its output goes to ours (stderr). */
function runHook(command: string, urls: readonly string[], output: (text: string) => void, stop?: AbortSignal): Promise<Delivery> {
  const what = `--on-change command with ${urls.length} URLs`;
  return new Promise((resolve) => {
    // Stopped with the deploy: a hook that hangs must not hold it (the signal reaches the shell, SIGTERM).
    const child = spawn('/bin/sh', ['-c', command], { stdio: ['pipe', 'pipe', 'pipe'], ...(stop === undefined ? {} : { signal: stop, killSignal: 'SIGTERM' as const }) });
    child.stdout.on('data', (chunk: Buffer) => output(chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => output(chunk.toString()));
    // A hook that does not read its input must not fail the write.
    child.stdin.on('error', () => undefined);
    child.stdin.end(urls.map((u) => `${u}\n`).join(''));
    child.on('error', (error) => resolve({ to: command, what, ok: false, message: stop?.aborted === true ? 'stopped by a signal' : error.message }));
    child.on('close', (code, signal) =>
      resolve(code === 0 ? { to: command, what, ok: true } : { to: command, what, ok: false, message: signal !== null ? `stopped by ${signal}` : `exit code ${code}` }),
    );
  });
}
