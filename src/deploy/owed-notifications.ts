import type { SitePaths } from '../paths/site-paths.js';
import type { Routes } from '../hosting/routes.js';
import { changesOfFiles, readerKindOf, type ReaderKind } from './change-set.js';
import type { OwedStore } from './owed-store.js';
import { INDEXNOW_MAX_URLS, notifyChanges, type Delivery, type NotifyOptions, type NotifySettings } from './notify.js';

/**
 * Notifications a deploy owes until they are delivered. Before its first write, a deploy records
 * in the owed store beside its deploy record (src/deploy/owed-store.ts), per listener (each WebSub
 * hub, IndexNow, the `--on-change` command), the documents it is about to write or remove that
 * the listener hears of: a hub its feeds, IndexNow the user and video documents, the command every
 * document. Each listener is then sent what it is owed a page at a time, in file order, and each
 * page is cleared once the listener has heard of it. A deploy killed after writing, or a listener
 * that is down, leaves the rest recorded, and the next deploy sends it, even though it then finds
 * those objects unchanged.
 */

/** Documents sent to a listener at once: as many requests as a whole page fills. */
const PAGE = 10_000;

/** One listener: its name in the owed store, the settings that reach it alone, what it hears of, and its page. */
export interface Listener {
  id: string;
  settings: NotifySettings;
  hears: (kind: ReaderKind, removed: boolean) => boolean;
  /** Documents per page: a whole number of its requests, so that paging sends the requests one delivery would. */
  pageSize: number;
}

export function listenersOf(settings: NotifySettings): Listener[] {
  const none: NotifySettings = { hubs: [], feedsPerRequest: settings.feedsPerRequest, indexNow: null };
  const perHubPage = settings.feedsPerRequest * Math.ceil(PAGE / settings.feedsPerRequest);
  const listeners: Listener[] = settings.hubs.map((hub) => ({
    id: `websub ${hub}`,
    settings: { ...none, hubs: [hub] },
    hears: (kind, removed) => kind.feed && !removed,
    pageSize: perHubPage,
  }));
  if (settings.indexNow !== null) {
    listeners.push({ id: `indexnow ${settings.indexNow.endpoint}`, settings: { ...none, indexNow: settings.indexNow }, hears: (kind) => kind.indexable, pageSize: INDEXNOW_MAX_URLS });
  }
  if (settings.onChange !== undefined) listeners.push({ id: 'on-change', settings: { ...none, onChange: settings.onChange }, hears: () => true, pageSize: PAGE });
  return listeners;
}

/**
 * Records, in one transaction on the disk before it returns, the documents each listener is owed:
 * `changed` then `removed`, read one after the other as they stream from the plan.
 */
export function oweChanges(store: OwedStore, target: string, listeners: readonly Listener[], routes: Routes, changed: Iterable<string>, removed: Iterable<string>): void {
  const entriesOf = function* (files: Iterable<string>, isRemoved: boolean) {
    for (const file of files) {
      const kind = readerKindOf(routes, file);
      yield { file, removed: isRemoved, heardBy: kind === null ? [] : listeners.filter((l) => l.hears(kind, isRemoved)).map((l) => l.id) };
    }
  };
  const entries = function* () {
    yield* entriesOf(changed, false);
    yield* entriesOf(removed, true);
  };
  store.owe(target, listeners.map((l) => l.id), entries());
}

export interface OwedDelivery {
  store: OwedStore;
  target: string;
  /** The listeners of this run. */
  listeners: readonly Listener[];
  /** Recorded listeners not among `listeners` that are gone for good (a hub no longer configured): forgotten. */
  isForgotten: (id: string) => boolean;
  /** Documents not yet in the store as the tree has them (not attempted, failed): owed, not sent yet. */
  pending: Iterable<string>;
  paths: SitePaths;
  routes: Routes;
  options: NotifyOptions;
}

/**
 * Sends each listener what it is owed, a page at a time, clearing each page it heard of; a page
 * not delivered stops that listener, and the rest stays owed. Resolves with every delivery, none thrown.
 */
export async function deliverOwed(run: OwedDelivery): Promise<Delivery[]> {
  const recorded = run.store.listeners(run.target);
  if (recorded.length === 0) return [];
  const active = new Set(run.listeners.map((l) => l.id));
  for (const id of recorded) if (!active.has(id) && run.isForgotten(id)) run.store.forget(run.target, id);
  run.store.setPending(run.pending);
  const deliveries: Delivery[] = [];
  for (const listener of run.listeners) {
    // Stopped by a signal: what is not yet delivered stays owed.
    if (run.options.stop?.aborted === true) break;
    for (let after = ''; ; ) {
      const page = run.store.page(run.target, listener.id, after, listener.pageSize);
      if (page.length === 0) break;
      after = page.at(-1)!.file;
      const changes = changesOfFiles(
        page.filter((f) => !f.removed).map((f) => f.file),
        page.filter((f) => f.removed).map((f) => f.file),
        run.paths,
        run.routes,
      );
      const sent = await notifyChanges(changes, listener.settings, run.options);
      deliveries.push(...sent);
      if (!sent.every((d) => d.ok)) break;
      run.store.settle(run.target, listener.id, page.map((f) => f.file));
    }
  }
  run.store.compact();
  return deliveries;
}
