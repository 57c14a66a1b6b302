import { ChangeLog } from '../../db/change-log.js';
import type { ValueIssue } from '../../db/decode.js';
import { openForReading } from '../../db/open-database.js';
import { SiteReader } from '../../db/site-reader.js';
import type { UserFormat } from '../../formats/format.js';
import { FORMATS } from '../../formats/registry.js';
import type { Encoding } from '../../paths/compression.js';
import { buildFingerprint, type BuildFingerprint } from '../plan/incremental.js';
import { renderUserTexts } from '../render/render-documents.js';
import type { RenderedDocument, RenderReply, RenderRequest, RenderWorkerData, WrittenForm } from './render-pool.js';
import { replyTo } from './render-reply.js';
import { writeRendered } from '../write/write-documents.js';
import { VIDFEEDS_VERSION } from '../../config/version.js';
import { createSiteContext } from '../render/site-context.js';

/**
 * What a thread of RenderPool (render-pool.ts) does, on whichever thread serves it: a render
 * thread of its own (render-worker.ts) or the build's write thread (write-worker.ts). It reads
 * users' bundles on its own connection, inside one read transaction, and renders their documents
 * with the same formats and site context as the build. It first checks that it sees what the
 * build sees (the change log position, the configuration and templates); if not, it says why and
 * renders nothing.
 */

/** Where a serving thread puts the files it writes (a build into an empty directory). */
export interface FileSink {
  /** Writes `body` at `path` (relative to the output directory), or throws naming why not. */
  place(path: string, body: Buffer): void;
  /** Called after each batch, before the build hears of it: files handed elsewhere go now. */
  send(): void;
  /**
   * Called between users: the write thread, lent to the pool, writes the batches the build thread
   * has handed it meanwhile, so its rendering never holds up the build's writes.
   */
  between?(): void;
}

function differs(mine: BuildFingerprint, build: BuildFingerprint): string | null {
  for (const key of Object.keys(build) as Array<keyof BuildFingerprint>) {
    if (mine[key] !== build[key]) return `the render thread's ${key} differs from the build's (a file changed during the build)`;
  }
  return null;
}

/**
 * Serves the batches the build sends on `data.port` until the port closes; writes through `sink`
 * when the build asked for files (`data.writeTo`), else sends the documents back.
 */
export function serveRenders(data: RenderWorkerData, sink: FileSink | null): void {
  const reply = (message: RenderReply) => replyTo(data, message);
  const formats = data.formats.map((name) => FORMATS.find((format) => format.name === name)) as UserFormat[];
  if (formats.some((format) => format === undefined || format.scope !== 'user')) return reply({ refused: `unknown user format among ${data.formats.join(', ')}` });
  const changed = differs(buildFingerprint(data.config, FORMATS, VIDFEEDS_VERSION), data.fingerprint);
  if (changed !== null) return reply({ refused: changed });
  const site = createSiteContext(data.config, FORMATS, new Date(data.now));
  const db = openForReading(data.db);
  const reader = new SiteReader(db, data.config.recommendationsCount);
  const parts = new Set(data.parts);
  // Issues go back with the batch that found them; the build's reader reports each once.
  let issues: ValueIssue[] = [];
  reader.onIssue((issue) => issues.push(issue));
  // The transaction stays open while the port is (until the build ends): every batch reads the
  // snapshot checked here.
  const endSnapshot = reader.beginSnapshot();
  const close = () => {
    endSnapshot();
    db.close();
  };
  const position = new ChangeLog(db).current().position;
  if (position !== data.position) {
    close();
    return reply({ refused: `the render thread read the change log at ${position}, the build at ${data.position} (the database changed as the build began)` });
  }
  const write = data.writeTo === null || sink === null ? null : writerOf(sink, data.writeTo.compression);
  data.port.on('message', ({ batch, ids, usernames }: RenderRequest) => {
    let users: RenderedDocument[][];
    issues = [];
    try {
      users = ids.map((id, i) => {
        if (i > 0) sink?.between?.();
        const texts = renderUserTexts(reader.userBundle(id, parts), formats, site);
        if (write === null) return texts;
        return texts.map((text, f) => ('body' in text ? { written: write(site.paths.file(formats[f]!, usernames[i]!), formats[f]!, text.body) } : text));
      });
      // Handed over before the build hears of them: it waits for what was handed.
      sink?.send();
    } catch (error) {
      // A failed read or write stops the build, naming what failed.
      return reply({ fatal: (error as Error).message });
    }
    reply({ batch, users, issues });
  });
  // The build is over (or stopped using this thread): end the read transaction.
  data.port.on('close', close);
  reply({ ready: true });
}

/**
 * Writes a document and its compressed forms through `sink` as the build's writer would, and says
 * what the state records of it.
 */
function writerOf(sink: FileSink, compression: readonly Encoding[]) {
  const place = (path: string, body: Buffer) => {
    try {
      sink.place(path, body);
    } catch (error) {
      throw new Error(`cannot write ${path}: ${(error as Error).message}`);
    }
  };
  return (path: string, format: UserFormat, text: string): WrittenForm => writeRendered(place, { format, path, text }, compression);
}
