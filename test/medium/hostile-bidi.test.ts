// Issue 27 row 16: U+202E (right-to-left override) in every text field the dashboard shows — a title ("Invoice
// \u202Efdp.exe" showed as "Invoice exe.pdf"), a description, a tag, a folder's name, a comment found by search — over
// a real socket: each override is shown as [U+202E], never applied (src/text/html.ts escapes every field that way),
// while Hebrew written with its marks stays as it is.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDashboard, type RunningDashboard } from "../../src/http/server.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const RLO = "\u202E";
const TITLE = `Invoice ${RLO}fdp.exe`;
const SHOWN = "Invoice [U+202E]fdp.exe";
/** Hebrew with a right-to-left mark placing the full stop: legitimate, kept as written. */
const HEBREW = "שלום עולם\u200F.";
/** Every override, embedding and isolate: none may reach a page. */
const BIDI = /[\u202A-\u202E\u2066-\u2069]/u;

let h: SyncHarness;
let dash: RunningDashboard;
let deviationid: string;

async function get(target: string): Promise<string> {
  const res = await fetch(`${dash.url}${target}`);
  expect(res.status).toBe(200);
  return res.text();
}

beforeAll(async () => {
  h = await createSyncHarness({ sim: { seed: 27, dataset: { deviations: 3, galleryFolders: 1, notes: 0, messages: 0, favourites: 0 } } });
  await h.runSource("gallery");
  const { rows } = await h.pool.query<{ deviationid: string; folderid: string }>(
    `SELECT m.deviationid, m.folderid FROM folder_members m JOIN deviations d USING (deviationid) WHERE d.type = 'image' ORDER BY 1 LIMIT 1`,
  );
  deviationid = rows[0]!.deviationid;
  await h.pool.query("UPDATE deviations SET title = $2 WHERE deviationid = $1", [deviationid, TITLE]);
  await h.pool.query("UPDATE deviation_metadata SET description = $2, tags = $3 WHERE deviationid = $1", [
    deviationid,
    `<p>Open ${RLO}fdp.exe first</p><p>${HEBREW}</p>`,
    [`tag${RLO}gat`],
  ]);
  await h.pool.query("UPDATE gallery_folders SET name = $2 WHERE folderid = $1", [rows[0]!.folderid, `Folder ${RLO}redlof`]);
  await h.pool.query(`INSERT INTO comments (commentid, subject_kind, subject_id, body, raw) VALUES ('C-BIDI-1', 'deviation', $1, $2, '{}')`, [
    deviationid,
    `<p>quokkabidi see ${RLO}fdp.exe</p>`,
  ]);
  dash = await startDashboard(h.services, { host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await dash?.close();
  await h?.close();
});

describe("direction overrides on the dashboard", () => {
  it("shows them in an item's title, description, tags and folder, and keeps Hebrew as written", async () => {
    const page = await get(`/item/${encodeURIComponent(deviationid)}`);
    expect(page).toContain(`<h1>${SHOWN}</h1>`);
    expect(page).toContain(`<title>${SHOWN}`);
    expect(page).toContain("Open [U+202E]fdp.exe first");
    expect(page).toContain("tag[U+202E]gat");
    expect(page).toContain("Folder [U+202E]redlof");
    expect(page).toContain(HEBREW);
    expect(page).not.toMatch(BIDI);
  });

  it("shows them in a comment found by search, and in the title of its hit", async () => {
    const page = await get("/archive?q=quokkabidi");
    expect(page).toContain("[U+202E]fdp.exe");
    expect(page).not.toMatch(BIDI);
    const archive = await get("/archive");
    expect(archive).toContain(SHOWN);
    expect(archive).not.toMatch(BIDI);
  });
});
