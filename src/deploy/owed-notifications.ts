import type { SitePaths } from '../paths/site-paths.js';
import type { Routes } from '../hosting/routes.js';
import { changesOfFiles } from './change-set.js';
import type { DeployRecord, OwedFiles } from './deploy-record.js';
import { notifyChanges, type Delivery, type NotifyOptions, type NotifySettings } from './notify.js';

/**
 * Notifications a deploy owes until they are delivered. Before its first write, a deploy records
 * in the target's deploy record, per listener (each WebSub hub, IndexNow, the `--on-change`
 * command), the documents it is about to write or remove; once a listener has heard of them, its
 * entries are cleared. A deploy killed after writing, or a listener that is down, leaves them
 * recorded, and the next deploy sends them, even though it then finds those objects unchanged.
 */

/** One listener: its name in the record, and the settings that reach it alone. */
export interface Listener {
  id: string;
  settings: NotifySettings;
}

export function listenersOf(settings: NotifySettings): Listener[] {
  const none: NotifySettings = { hubs: [], feedsPerRequest: settings.feedsPerRequest, indexNow: null };
  const listeners: Listener[] = settings.hubs.map((hub) => ({ id: `websub ${hub}`, settings: { ...none, hubs: [hub] } }));
  if (settings.indexNow !== null) listeners.push({ id: `indexnow ${settings.indexNow.endpoint}`, settings: { ...none, indexNow: settings.indexNow } });
  if (settings.onChange !== undefined) listeners.push({ id: 'on-change', settings: { ...none, onChange: settings.onChange } });
  return listeners;
}

export interface OwedDelivery {
  record: DeployRecord;
  target: string;
  /** The listeners of this run. */
  listeners: readonly Listener[];
  /** Recorded listeners not among `listeners` that are gone for good (a hub no longer configured): forgotten. */
  isForgotten: (id: string) => boolean;
  /** Documents not yet in the store as the tree has them (not attempted, failed): owed, not sent yet. */
  pending: ReadonlySet<string>;
  paths: SitePaths;
  routes: Routes;
  options: NotifyOptions;
}

/** Sends each listener what it is owed; clears what it heard of. Resolves with every delivery, none thrown. */
export async function deliverOwed(run: OwedDelivery): Promise<Delivery[]> {
  const owed = run.record.owed(run.target);
  const active = new Set(run.listeners.map((l) => l.id));
  for (const id of Object.keys(owed)) if (!active.has(id) && run.isForgotten(id)) run.record.settle(run.target, id, null);
  const deliveries: Delivery[] = [];
  for (const listener of run.listeners) {
    const entry = owed[listener.id];
    if (entry === undefined) continue;
    const due: OwedFiles = { changed: entry.changed.filter((f) => !run.pending.has(f)), removed: entry.removed.filter((f) => !run.pending.has(f)) };
    if (due.changed.length === 0 && due.removed.length === 0) continue;
    const sent = await notifyChanges(changesOfFiles(due.changed, due.removed, run.paths, run.routes), listener.settings, run.options);
    deliveries.push(...sent);
    if (sent.every((d) => d.ok)) run.record.settle(run.target, listener.id, due);
  }
  return deliveries;
}

/** How many documents are still owed to any listener of the target. */
export function owedCount(record: DeployRecord, target: string): number {
  const files = new Set<string>();
  for (const entry of Object.values(record.owed(target))) for (const file of [...entry.changed, ...entry.removed]) files.add(file);
  return files.size;
}
