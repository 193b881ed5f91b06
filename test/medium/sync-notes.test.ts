// The notes source through the real runner against the simulator: every folder and note mirrored field
// by field, a quiet re-run costs the folder-list call only, new notes are picked up exactly, and a full
// sweep marks deleted notes removed.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { GroundTruth } from "../../src/simulator/dataset.ts";

type SimNote = GroundTruth["notes"][number];
import { notesSource } from "../../src/sync/sources/notes.ts";
import { createSyncHarness, type SyncHarness, runSourceLater } from "../helpers/sync-harness.ts";

let h: SyncHarness;

// A fresh mirror and simulator per test: tests change the data upstream and count what a run finds.
beforeEach(async () => {
  // Inbox and Sent plus two folders of the owner's: 300 notes in 4 folders.
  h = await createSyncHarness({ sim: { dataset: { notes: 300, noteFolders: 2 } }, sources: [notesSource] });
});
afterEach(async () => {
  await h?.close();
});

/** Runs the source a minute of simulated time after the previous run (the simulator's clock is frozen). */
async function runLater(opts: { full?: boolean } = {}) {
  h.sim.clock.advance(60_000);
  return h.runSource("notes", opts);
}

/** A POST of the owner's to the simulator's API, which must succeed. */
async function post(route: string, body: URLSearchParams) {
  const token = h.sim.issueUserToken().access_token;
  const res = await fetch(`${h.sim.apiUrl}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/x-www-form-urlencoded" },
    body,
  });
  expect(res.status, await res.text()).toBe(200);
}

type NoteRow = {
  noteid: string;
  folderid: string | null;
  ts: Date | null;
  unread: boolean | null;
  starred: boolean | null;
  sent: boolean | null;
  subject: string | null;
  body: string | null;
  sender_userid: string | null;
  recipients: Array<{ userid: string }> | null;
  removed_at: Date | null;
};

async function mirrored(): Promise<Map<string, NoteRow>> {
  const { rows } = await h.pool.query<NoteRow>(
    `SELECT noteid, folderid, ts, unread, starred, sent, subject, body, sender_userid, recipients, removed_at
     FROM notes WHERE account_id = $1`,
    [h.account.id],
  );
  return new Map(rows.map((r) => [r.noteid, r]));
}

function expected(n: SimNote) {
  return {
    noteid: n.noteid,
    folderid: n.folderid,
    ts: new Date(n.ts.replace(/\+0000$/, "Z")),
    unread: n.unread,
    starred: n.starred,
    sent: n.sent,
    subject: n.subject,
    body: n.body,
    sender_userid: n.fromId,
    recipients: n.recipientIds,
    removed_at: null,
  };
}

function actual(r: NoteRow) {
  return { ...r, recipients: r.recipients?.map((u) => u.userid) ?? null };
}

describe("notes source", () => {
  it("mirrors every note folder and all 300 notes, field by field", async () => {
    const result = await runLater();

    expect(result.status).toBe("ok");
    expect(result.full).toBe(true);
    const truth = h.sim.truth.notes;
    expect(truth.length).toBe(300);
    expect(h.sim.truth.noteFolders.length).toBe(4);
    const rows = await mirrored();
    expect([...rows.keys()].sort()).toEqual(truth.map((n) => n.noteid).sort());
    for (const n of truth) expect(actual(rows.get(n.noteid)!)).toEqual(expected(n));
    expect(result.counters).toEqual({ new: 300, changed: 0, removed: 0 });

    const { rows: folders } = await h.pool.query<{ folderid: string; title: string; count: number }>(
      "SELECT folderid, title, count FROM note_folders WHERE account_id = $1 ORDER BY folderid",
      [h.account.id],
    );
    const truthFolders = h.sim.truth.noteFolders
      .map((f) => ({ folderid: f.folderid, title: f.title, count: truth.filter((n) => n.folderid === f.folderid).length }))
      .sort((a, b) => a.folderid.localeCompare(b.folderid));
    expect(folders).toEqual(truthFolders);

    // Senders are mirrored users, so "notes from a user" joins.
    const { rows: dangling } = await h.pool.query(
      "SELECT n.noteid FROM notes n LEFT JOIN users u ON u.userid = n.sender_userid WHERE n.account_id = $1 AND u.userid IS NULL",
      [h.account.id],
    );
    expect(dangling).toEqual([]);
  });

  it("costs at most 2 API calls when nothing changed", async () => {
    // Up to date with upstream first, whatever ran before (or nothing did): then measure a run with no news.
    await runLater();
    const { result, calls } = await runSourceLater(h, "notes");

    expect(result.full).toBe(false);
    expect(calls).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });
  });

  it("picks up exactly the new notes, walking only the folder that changed", async () => {
    await runLater(); // mirrored before the changes
    const before = await mirrored();
    const added = [h.sim.activity({ kind: "new_note", subject: "One" }), h.sim.activity({ kind: "new_note", subject: "Two" })].map((a) => a.noteid as string);
    const seq = h.lastSeq();
    const result = await runLater();
    const log = h.sim.log().filter((e) => e.seq > seq);

    // The folder list, then the Inbox's newest page (both notes) and the one after it (already mirrored).
    expect(log.filter((e) => e.route.startsWith("/api/")).length).toBeLessThanOrEqual(3);
    expect(result.counters).toEqual({ new: 2, changed: 0, removed: 0 });
    const rows = await mirrored();
    expect([...rows.keys()].filter((id) => !before.has(id)).sort()).toEqual([...added].sort());
    for (const id of added) expect(actual(rows.get(id)!)).toEqual(expected(h.sim.truth.notes.find((n) => n.noteid === id)!));
    // Only the Inbox was listed.
    const walked = new Set(log.filter((e) => e.route.endsWith("/notes")).map((e) => e.query.folder ?? e.query.folderid));
    expect([...walked]).toEqual(["1"]);
  });

  it("a full sweep marks a note deleted upstream as removed, and only that one", async () => {
    await runLater(); // mirrored before the changes
    const victim = h.sim.truth.notes.find((n) => n.folderid !== "1" && n.folderid !== "2")!;
    await post("/notes/delete", new URLSearchParams({ "noteids[]": victim.noteid }));

    const result = await runLater({ full: true });
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 1 });
    const removed = [...(await mirrored()).values()].filter((r) => r.removed_at !== null).map((r) => r.noteid);
    expect(removed).toEqual([victim.noteid]);
  });

  it("a folder removed upstream is marked removed, and a full sweep marks the notes deleted with it, not those moved out", async () => {
    await runLater(); // mirrored before the changes
    const folder = h.sim.truth.noteFolders.find((f) => f.folderid !== "1" && f.folderid !== "2")!;
    const inFolder = h.sim.truth.notes.filter((n) => n.folderid === folder.folderid);
    expect(inFolder.length).toBeGreaterThan(2);
    // Its notes all but two deleted, then the folder removed: the service moves the two left to the Inbox or Sent.
    const [deleted, moved] = [inFolder.slice(2), inFolder.slice(0, 2)];
    await post("/notes/delete", new URLSearchParams(deleted.map((n): [string, string] => ["noteids[]", n.noteid])));
    await post(`/notes/folders/remove/${folder.folderid}`, new URLSearchParams());

    await runLater();
    const folderRow = async () =>
      (await h.pool.query("SELECT removed_reason FROM note_folders WHERE account_id = $1 AND folderid = $2", [h.account.id, folder.folderid])).rows[0];
    expect(await folderRow()).toEqual({ removed_reason: "gone_from_listing" });

    const result = await runLater({ full: true });
    expect(result.counters).toMatchObject({ removed: deleted.length });
    const rows = await mirrored();
    expect(
      [...rows.values()]
        .filter((r) => r.removed_at !== null)
        .map((r) => r.noteid)
        .sort(),
    ).toEqual(deleted.map((n) => n.noteid).sort());
    for (const n of moved) expect(rows.get(n.noteid)?.folderid).toBe(n.sent ? "2" : "1");
  });

  it("a sweep that skipped a page it could not read marks none of a removed folder's notes: they may be on that page", async () => {
    await runLater(); // mirrored before the changes
    const folder = h.sim.truth.noteFolders.find((f) => f.folderid !== "1" && f.folderid !== "2")!;
    const moved = h.sim.truth.notes.filter((n) => n.folderid === folder.folderid);
    await post(`/notes/folders/remove/${folder.folderid}`, new URLSearchParams());
    h.sim.faults.add({ route: "/notes$", kind: "wrong_shape", times: 2 });
    const result = await runLater({ full: true });
    expect(result.status).toBe("incomplete");
    expect([...(await mirrored()).values()].filter((r) => r.removed_at !== null)).toEqual([]);
    // The next sweep reads them where they went.
    await runLater({ full: true });
    const rows = await mirrored();
    expect([...rows.values()].filter((r) => r.removed_at !== null)).toEqual([]);
    for (const n of moved) expect(rows.get(n.noteid)?.folderid).toBe(n.sent ? "2" : "1");
  });

  // docs/service-behaviour.md#tolerant-reading: a page skipped as unreadable is notes the sweep did not see.
  it("a full sweep that skipped a page it could not read marks no note removed", async () => {
    await runLater(); // mirrored whole
    h.sim.faults.add({ route: "/notes$", kind: "wrong_shape", times: 2 });
    const result = await runLater({ full: true });
    expect(result.status).toBe("incomplete");
    expect(result.counters).toMatchObject({ removed: 0 });
    expect([...(await mirrored()).values()].filter((r) => r.removed_at !== null)).toEqual([]);
  });
});
