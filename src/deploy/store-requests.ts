/**
 * How a deploy asks an object store, whatever the store: each request has a deadline, and each is
 * tried up to `tries` times by this loop alone (the SDK client makes one try per call), so
 * `--tries` means tries per request however many other requests fail at the same time. Throttling
 * (429, 503 SlowDown), server errors and broken connections are tried again after a back-off with
 * full jitter; a refusal (403, 404, a bad request) is not. A request the store does not answer
 * within the deadline is not tried again: a store that accepts connections and never answers
 * would otherwise hold the deploy (and the build lock) for `tries` deadlines, so it ends the
 * deploy as unreachable. A stop (SIGINT, SIGTERM) aborts every request under way at once.
 */

export interface RequestPolicy {
  /** Tries per request, the first included. */
  tries: number;
  /** How long one try may take, answer included. */
  timeoutMs: number;
  /** Aborted when the deploy is to stop. */
  stop: AbortSignal;
  /** The first back-off; each next one doubles, up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
}

/** A request given up on: why, in words that name the store's code and HTTP status. */
export class StoreRequestError extends Error {
  constructor(
    message: string,
    /** Whether the store may answer later (throttling, a server error, no connection, no answer). */
    readonly transient: boolean,
    /** The HTTP status of the last answer, when there was one. */
    readonly status: number | undefined,
    /** The store's error code (NoSuchBucket, SlowDown), or the SDK's error name. */
    readonly code: string,
  ) {
    super(message);
    this.name = 'StoreRequestError';
  }
}

/** The store did not answer one request within the deadline: the deploy ends (exit 75). */
export class StoreUnresponsive extends StoreRequestError {
  constructor(what: string, timeoutMs: number) {
    super(`the store did not answer ${what} within ${timeoutMs / 1000} s (--timeout)`, true, undefined, 'Timeout');
    this.name = 'StoreUnresponsive';
  }
}

/** The deploy was asked to stop while the request was under way or before it began. */
export class StopRequested extends Error {
  constructor() {
    super('stopped');
    this.name = 'StopRequested';
  }
}

const TRANSIENT_CODES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'RequestThrottled',
  'TooManyRequestsException',
  'RequestTimeout',
  'RequestTimeoutException',
  'InternalError',
  'ServiceUnavailable',
  'TimeoutError',
]);
const NETWORK_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'ECONNABORTED', 'UND_ERR_SOCKET']);

interface SdkError {
  name?: string;
  message?: string;
  code?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
}

/** Whether another try may succeed. */
export function isTransient(error: unknown): boolean {
  const e = error as SdkError;
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined && (status === 429 || status >= 500)) return true;
  if (TRANSIENT_CODES.has(e.Code ?? e.name ?? '')) return true;
  return NETWORK_CODES.has(e.code ?? '') || /socket hang up|ECONNRESET|ECONNREFUSED/.test(e.message ?? '');
}

/**
 * An error in words: the store's code and message, and the HTTP status. The SDK names an error
 * whose answer has no body, or no message in its body (Ceph's), "UnknownError": the status and
 * code say more.
 */
export function describeStoreError(error: unknown): { text: string; status: number | undefined; code: string } {
  const e = error as SdkError;
  const status = e.$metadata?.httpStatusCode;
  // A socket's failure (no host by that name, a refused connection) arrives as a plain Error whose
  // `code` names it: that code says more than "Error", and decides whether trying again can help.
  const rawCode = e.Code ?? (e.name === undefined || e.name === 'Error' ? (e.code ?? e.name) : e.name) ?? 'Error';
  const code = /^(Unknown|UnknownError|\d+)$/.test(rawCode) ? (status === undefined ? 'Error' : `HTTP ${status}`) : rawCode;
  const rawMessage = (e.message ?? String(error)).trim();
  const message = rawMessage === '' || rawMessage === 'UnknownError' || rawMessage === rawCode ? '' : rawMessage;
  const where = status === undefined || code === `HTTP ${status}` ? '' : ` (HTTP ${status})`;
  return { text: `${code}${message === '' ? '' : `: ${message}`}${where}`, status, code };
}

/**
 * Whether the store refused a request for what the operator must fix: the credentials (401, 403,
 * the SDK finding none), the bucket (404, NoSuchBucket) or the endpoint (a host name the resolver
 * does not know: ENOTFOUND, where a resolver that cannot answer now says EAI_AGAIN). Trying again
 * later changes nothing.
 */
export function refusedForSettings(status: number | undefined, code: string): boolean {
  return code === 'CredentialsProviderError' || status === 401 || status === 403 || status === 404 || code === 'NoSuchBucket' || code === 'ENOTFOUND';
}

/** Runs `attempt` under the policy: a deadline per try, tries with back-off on transient errors. */
export async function withTries<T>(what: string, policy: RequestPolicy, attempt: (signal: AbortSignal) => Promise<T>): Promise<T> {
  let wait = policy.backoffMs ?? 200;
  const maxWait = policy.maxBackoffMs ?? 20_000;
  for (let n = 1; ; n++) {
    if (policy.stop.aborted) throw new StopRequested();
    const attemptSignal = new TryDeadline(policy.stop, policy.timeoutMs);
    try {
      return await attempt(attemptSignal.signal);
    } catch (error) {
      if (policy.stop.aborted) throw new StopRequested();
      if (attemptSignal.expired) throw new StoreUnresponsive(what, policy.timeoutMs);
      const transient = isTransient(error);
      if (!transient || n >= policy.tries) {
        const { text, status, code } = describeStoreError(error);
        throw new StoreRequestError(`${text}${n > 1 ? `, after ${n} tries` : ''}`, transient, status, code);
      }
    } finally {
      attemptSignal.release();
    }
    await pause(Math.random() * Math.min(wait, maxWait), policy.stop);
    wait *= 2;
  }
}

/**
 * One try's signal: aborted by the stop or once the deadline passes. Its timer goes, and it leaves
 * the stop's waiters, as soon as the try ends, so a finished request leaves nothing behind: a
 * deadline from AbortSignal.timeout outlives its request by the whole timeout, and at a thousand
 * requests a second the signals, timers and the SDK's listeners they hold fill the heap.
 */
class TryDeadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly stopped: Set<() => void>;
  private readonly abortOnStop: () => void;
  expired = false;

  constructor(stop: AbortSignal, timeoutMs: number) {
    this.timer = setTimeout(() => {
      this.expired = true;
      this.controller.abort(new DOMException('the try took longer than its deadline', 'TimeoutError'));
    }, timeoutMs);
    this.abortOnStop = () => this.controller.abort(stop.reason);
    this.stopped = waitersOf(stop);
    this.stopped.add(this.abortOnStop);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  release(): void {
    clearTimeout(this.timer);
    this.stopped.delete(this.abortOnStop);
  }
}

const WAITERS = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * What runs when `stop` is aborted: the tries under way and the back-offs waiting. The stop has one
 * listener for all of them: one each would pass Node's limit of ten and print a warning whenever
 * more than ten requests back off at once.
 */
function waitersOf(stop: AbortSignal): Set<() => void> {
  let waiters = WAITERS.get(stop);
  if (waiters === undefined) {
    const set = new Set<() => void>();
    stop.addEventListener('abort', () => [...set].forEach((wake) => wake()), { once: true });
    WAITERS.set(stop, set);
    waiters = set;
  }
  return waiters;
}

/** Waits `ms`, or less when the stop comes first. */
function pause(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (stop.aborted) return resolve();
    const waiters = waitersOf(stop);
    const done = () => {
      clearTimeout(timer);
      waiters.delete(done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    waiters.add(done);
  });
}
