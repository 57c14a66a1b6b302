import { hasNothingToSay, notifyChanges, type Changes, type Delivery, type NotifyOptions, type NotifySettings } from './notify.js';

/**
 * Notifications for `vidfeeds watch`: the changes of every build in a window of `delayMs` from
 * the first are sent together, so a burst of edits (several quick rebuilds) makes one request
 * per hub, not one per build. A URL changed twice in the window is sent once. Sends never
 * overlap: changes that arrive during one go with the next.
 */
export class NotifyBatcher {
  private changed = new Set<string>();
  private removed = new Set<string>();
  private feeds = new Set<string>();
  private indexable = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> = Promise.resolve();

  constructor(
    private readonly settings: NotifySettings,
    private readonly delayMs: number,
    private readonly report: (deliveries: Delivery[]) => void,
    private readonly options: NotifyOptions = {},
  ) {}

  add(changes: Changes): void {
    if (hasNothingToSay(changes)) return;
    for (const url of changes.changed) {
      this.changed.add(url);
      this.removed.delete(url);
    }
    for (const url of changes.removed) {
      this.removed.add(url);
      this.changed.delete(url);
      this.feeds.delete(url);
    }
    for (const url of changes.feeds) this.feeds.add(url);
    for (const url of changes.indexable) this.indexable.add(url);
    if (this.timer === null) {
      this.timer = setTimeout(() => void this.flush(), this.delayMs);
      this.timer.unref();
    }
  }

  /** Sends what is collected now (after any send under way); resolves when it has been sent. */
  flush(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const changes: Changes = { changed: [...this.changed], removed: [...this.removed], feeds: [...this.feeds], indexable: [...this.indexable] };
    this.changed = new Set();
    this.removed = new Set();
    this.feeds = new Set();
    this.indexable = new Set();
    this.sending = this.sending.then(async () => {
      if (hasNothingToSay(changes)) return;
      this.report(await notifyChanges(changes, this.settings, this.options));
    });
    return this.sending;
  }
}
