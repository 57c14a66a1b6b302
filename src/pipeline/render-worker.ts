import { threadId, workerData } from 'node:worker_threads';
import { ChangeLog } from '../db/change-log.js';
import type { ValueIssue } from '../db/decode.js';
import { openForReading } from '../db/open-database.js';
import { SiteReader } from '../db/site-reader.js';
import type { UserFormat } from '../formats/format.js';
import { FORMATS } from '../formats/registry.js';
import { buildFingerprint, type BuildFingerprint } from './incremental.js';
import type { Encoding } from '../paths/compression.js';
import { FilePlacer, resolveInside } from './output-writer.js';
import { renderUserTexts } from './render-documents.js';
import type { RenderedDocument, RenderReply, RenderRequest, RenderWorkerData, WrittenForm } from './render-pool.js';
import { writeRendered } from './write-documents.js';
import { LaneWriter } from './write-pool.js';
import { VIDFEEDS_VERSION } from '../config/version.js';
import { createSiteContext } from './site-context.js';

/**
 * A worker of RenderPool (render-pool.ts): reads users' bundles on its own connection, inside one
 * read transaction, and renders their documents with the same formats and site context as the
 * build. It first checks that it sees what the build sees (the change log position, the
 * configuration and templates); if not, it says why and renders nothing.
 */
const data = workerData as RenderWorkerData;
const { port, signal } = data;

function reply(message: RenderReply): void {
  port.postMessage(message);
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
}

function differs(mine: BuildFingerprint, build: BuildFingerprint): string | null {
  for (const key of Object.keys(build) as Array<keyof BuildFingerprint>) {
    if (mine[key] !== build[key]) return `the render thread's ${key} differs from the build's (a file changed during the build)`;
  }
  return null;
}

function start(): void {
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
  // The transaction stays open for the worker's life (it ends with the build): every batch reads
  // the snapshot checked here.
  db.exec('BEGIN');
  const position = new ChangeLog(db).current().position;
  if (position !== data.position) {
    return reply({ refused: `the render thread read the change log at ${position}, the build at ${data.position} (the database changed as the build began)` });
  }
  const lane = data.writeTo?.lane == null ? null : new LaneWriter(data.writeTo.lane, `${process.pid}-r${threadId}`);
  const write = data.writeTo === null ? null : writerOf(data.writeTo, lane);
  reply({ ready: true });
  port.on('message', ({ batch, ids, usernames }: RenderRequest) => {
    let users: RenderedDocument[][];
    issues = [];
    try {
      users = ids.map((id, i) => {
        const texts = renderUserTexts(reader.userBundle(id, parts), formats, site);
        if (write === null) return texts;
        return texts.map((text, f) => ('body' in text ? { written: write(site.paths.file(formats[f]!, usernames[i]!), formats[f]!, text.body) } : text));
      });
      // Handed to the write thread before the build hears of them: it waits for what was handed.
      lane?.send();
    } catch (error) {
      // A failed read or write stops the build, naming what failed.
      return reply({ fatal: (error as Error).message });
    }
    reply({ batch, users, issues });
  });
}

/**
 * Writes a document and its compressed forms into the output directory as the build's writer
 * would (FilePlacer: beside, then renamed into place), through the build's write thread when it
 * gave a lane, and says what the state records of it.
 */
function writerOf({ root, compression }: { root: string; compression: Encoding[] }, lane: LaneWriter | null) {
  const placer = lane === null ? new FilePlacer(root, `${process.pid}-r${threadId}`) : null;
  const place = (path: string, body: Buffer) => {
    try {
      if (lane !== null) lane.write(path, body);
      else placer!.place(resolveInside(root, path), body);
    } catch (error) {
      throw new Error(`cannot write ${path}: ${(error as Error).message}`);
    }
  };
  return (path: string, format: UserFormat, text: string): WrittenForm => writeRendered(place, { format, path, text }, compression);
}

try {
  start();
} catch (error) {
  reply({ refused: `the render thread could not start: ${(error as Error).message}` });
}
