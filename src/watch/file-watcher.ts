import { watch, type FSWatcher } from 'chokidar';
import { basename, dirname, resolve, sep } from 'node:path';
import type { ChangeKind } from './watch-session.js';

/**
 * Tells the watch session which of its inputs changed on disk: the database file and its WAL
 * (every commit touches one of them; the `-shm` file is left out, since every reader writes it),
 * the configuration file (which may not exist yet) and the template directories. Files are
 * followed through their directories, so a file that an editor or SQLite replaces, deletes or
 * creates later is still seen.
 */

/** How long chokidar ignores a file's changes after reporting one (its `_throttle` of 'change'). */
const CHOKIDAR_THROTTLE_MS = 50;

export interface WatchedInputs {
  db: string;
  /** The configuration file, when there is one or may be one. */
  config: string | null;
  templateDirs: readonly string[];
}

export interface FileWatcher {
  /** Follows another set of template directories (the configuration named others). */
  setTemplateDirs(dirs: readonly string[]): void;
  /** Resolves once the initial scan is done and changes are reported. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function watchInputs(
  inputs: WatchedInputs,
  onChange: (kind: ChangeKind, path: string) => void,
  onError: (message: string) => void,
): FileWatcher {
  const db = resolve(inputs.db);
  const files = new Map<string, ChangeKind>([
    [db, 'database'],
    [`${db}-wal`, 'database'],
  ]);
  if (inputs.config !== null) files.set(resolve(inputs.config), 'config');
  let templateDirs = inputs.templateDirs.map((d) => resolve(d));
  const fileDirs = [...new Set([...files.keys()].map((f) => dirname(f)))];

  const kindOf = (path: string): ChangeKind | null => {
    const file = files.get(path);
    if (file !== undefined) return file;
    return templateDirs.some((dir) => path === dir || path.startsWith(dir + sep)) ? 'template' : null;
  };
  // A directory holding watched files is scanned only one level deep and only for those files.
  const ignored = (path: string): boolean => {
    if (kindOf(path) !== null) return false;
    if (fileDirs.includes(path)) return false;
    return true;
  };

  const watcher: FSWatcher = watch([...fileDirs, ...templateDirs], { ignoreInitial: true, ignored, persistent: true });
  const readyPromise = new Promise<void>((resolveReady) => watcher.once('ready', () => resolveReady()));
  // chokidar drops a file's further changes for 50 ms after it reports one. An editor saving in
  // place truncates and then writes: the truncation is reported, the write is not, and the session
  // would keep the empty file until the next edit. So each report is repeated once after that
  // window (counted from the file's last report), for whatever the file holds by then; a repeat
  // that finds nothing new builds nothing.
  const again = new Map<string, NodeJS.Timeout>();
  // Every touch of the database files is passed on, even those without new data (SQLite readers,
  // our own builds included, open the -wal read-write; checkpoints rewrite the database file): the
  // session builds only when the change log moved, which no file time can tell reliably.
  const report = (path: string) => {
    const full = resolve(path);
    const kind = kindOf(full);
    if (kind === null) return;
    onChange(kind, full);
    clearTimeout(again.get(full));
    const timer = setTimeout(() => {
      again.delete(full);
      if (kindOf(full) !== null) onChange(kind, full);
    }, CHOKIDAR_THROTTLE_MS + 20);
    timer.unref();
    again.set(full, timer);
  };
  watcher.on('add', report).on('change', report).on('unlink', report).on('addDir', report).on('unlinkDir', report);
  watcher.on('error', (error) => onError(`watching files failed: ${(error as Error).message}`));

  return {
    setTemplateDirs(dirs) {
      const next = dirs.map((d) => resolve(d));
      const gone = templateDirs.filter((d) => !next.includes(d));
      const added = next.filter((d) => !templateDirs.includes(d));
      templateDirs = next;
      if (gone.length > 0) watcher.unwatch(gone);
      if (added.length > 0) watcher.add(added);
    },
    ready: () => readyPromise,
    close: () => {
      for (const timer of again.values()) clearTimeout(timer);
      again.clear();
      return watcher.close();
    },
  };
}

/** The file name to show for a change (`site.sqlite-wal`, `vidfeeds.config.json`). */
export function shortName(path: string): string {
  return basename(path);
}
