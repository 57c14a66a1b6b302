import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { buildInMemory, createDemoDb } from '../helpers/site-fixture.js';

/** The forms a text can take in our documents: as is, XML/HTML-escaped, URL-encoded. */
function forms(text: string): string[] {
  const xml = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return [...new Set([text, xml, xml.replace(/"/g, '&quot;'), xml.replace(/"/g, '&#x22;'), encodeURIComponent(text)])];
}

describe('privacy across every document of the demo site', () => {
  it('publishes nothing private, hidden or of inactive users', () => {
    const { file } = createDemoDb({ users: 120, seed: 11 });
    const { writer } = buildInMemory(file);
    const documents = [...writer.files].map(([path, body]) => ({ path, text: body.toString('utf8') }));
    expect(documents.length).toBeGreaterThan(200);

    const db = new Database(file, { readonly: true });
    const forbidden: Array<{ what: string; text: string }> = [];
    const users = db.prepare('SELECT * FROM users').all() as Array<Record<string, string | number | null>>;
    for (const u of users) {
      const active = u.state === 'active';
      if (u.email && !(active && u.show_email === 1)) forbidden.push({ what: `e-mail of ${u.username}`, text: String(u.email) });
      if (u.phone && !(active && u.show_phone === 1)) forbidden.push({ what: `phone of ${u.username}`, text: String(u.phone) });
      if (u.street_address && !(active && u.show_address === 1)) forbidden.push({ what: `street of ${u.username}`, text: String(u.street_address) });
      if (!(active && u.show_chat_ids === 1)) {
        for (const chat of ['aim_chat_id', 'yahoo_chat_id', 'msn_chat_id', 'icq_chat_id', 'jabber_chat_id']) {
          if (u[chat] && String(u[chat]).length > 8) forbidden.push({ what: `${chat} of ${u.username}`, text: String(u[chat]) });
        }
      }
      if (!active) {
        forbidden.push({ what: `display name of inactive ${u.username}`, text: String(u.display_name) });
        forbidden.push({ what: `profile of inactive ${u.username}`, text: `/${encodeURIComponent(String(u.username))}/` });
      }
    }
    const privateVideos = db
      .prepare(`SELECT v.public_id, v.title, u.username FROM videos v JOIN users u ON u.id = v.user_id WHERE v.visibility = 'private' OR u.state <> 'active'`)
      .all() as Array<{ public_id: string; title: string }>;
    expect(privateVideos.length).toBeGreaterThan(10);
    for (const v of privateVideos) forbidden.push({ what: `unpublished video ${v.public_id}`, text: `/${v.public_id}` });
    const hiddenGroups = db
      .prepare(`SELECT g.slug FROM groups g JOIN users o ON o.id = g.owner_id WHERE g.hidden = 1 OR o.state <> 'active'`)
      .all() as Array<{ slug: string }>;
    expect(hiddenGroups.length).toBeGreaterThan(0);
    for (const g of hiddenGroups) forbidden.push({ what: `hidden group ${g.slug}`, text: `/groups/${g.slug}/` });
    db.close();

    const leaks: string[] = [];
    for (const doc of documents) {
      for (const f of forbidden) {
        if (doc.path.includes(f.text.replace(/^\/|\/$/g, '') + '/') && f.what.startsWith('unpublished')) leaks.push(`${f.what} has a file ${doc.path}`);
        for (const form of forms(f.text)) if (doc.text.includes(form)) leaks.push(`${f.what} appears in ${doc.path}`);
      }
      // Only http(s) URLs are ever linked: nothing a reader's browser would run.
      if (/(href|src|resource|url)=["']?\s*(javascript|data|vbscript):/i.test(doc.text)) leaks.push(`unsafe URL in ${doc.path}`);
    }
    expect([...new Set(leaks)].slice(0, 20)).toEqual([]);
  });
});
