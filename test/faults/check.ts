// The fault suite's closing check: the mirror against the simulator's ground truth (the owner's gallery
// deviations, ids and titles; gallery membership; notes; messages), no duplicated rows, every archived
// file's sha256 the simulator's, and no temp file left under the archive's .partial/.
import fs from "node:fs/promises";
import path from "node:path";
import { expect } from "vitest";
import { verifyArchive } from "../../src/downloads/verify.ts";
import { createLogger } from "../../src/log.ts";
import { PARTIAL_DIR } from "../../src/storage/archive.ts";
import type { FaultHarness } from "./harness.ts";

const byId = <T extends Record<string, unknown>>(rows: T[], key: keyof T) => [...rows].sort((a, b) => String(a[key]).localeCompare(String(b[key])));

/** Postgres text cannot hold NUL: the mirror stores a title without it. */
const storable = (text: string) => text.replaceAll("\u0000", "");

/** The archive as a whole: the synced mirror, then every file whole and matching, and nothing left half-done. */
export async function checkMirror(h: FaultHarness): Promise<{ deviations: number; files: number }> {
  const { deviations } = await checkSyncedMirror(h);
  return { deviations, files: await checkFiles(h) };
}

/** The mirror equals the simulator's ground truth (owner's galleries, notes, messages) with no duplicated rows. */
export async function checkSyncedMirror(h: Pick<FaultHarness, "sim" | "pool" | "account">): Promise<{ deviations: number }> {
  const truth = h.sim.truth;
  const live = (ids: readonly string[]) => ids.filter((id) => truth.deviations.get(id)?.isDeleted === false);
  const galleries = truth.galleryFolders.filter((f) => f.ownerId === truth.ownerId);

  // Deviations of the owner's galleries: ids and titles.
  const ownIds = [...new Set(galleries.flatMap((f) => live(f.deviationIds)))];
  const { rows: devs } = await h.pool.query<{ deviationid: string; title: string }>(
    "SELECT deviationid, title FROM deviations WHERE deviationid = ANY($1::text[]) AND removed_at IS NULL",
    [ownIds],
  );
  expect(byId(devs, "deviationid")).toEqual(byId(ownIds.map((id) => ({ deviationid: id, title: storable(truth.deviations.get(id)!.title) })), "deviationid"));

  // Gallery folder membership, with positions counted from each folder's end. (Collections are left out:
  // their membership of deleted favourites follows its own rules, see test/medium/sync-collections.test.ts.)
  const expectedMembers = galleries.map((f) => ({ kind: "gallery", f })).flatMap(({ kind, f }) => {
    const ids = live(f.deviationIds);
    return ids.map((deviationid, i) => ({ kind, folderid: f.folderid, deviationid, position: ids.length - 1 - i }));
  });
  const { rows: members } = await h.pool.query<{ kind: string; folderid: string; deviationid: string; position: number }>(
    "SELECT kind::text AS kind, folderid, deviationid, position FROM folder_members WHERE removed_at IS NULL AND kind = 'gallery'",
  );
  const memberKey = (m: { kind: string; folderid: string; deviationid: string }) => `${m.kind}/${m.folderid}/${m.deviationid}`.toLowerCase();
  const sortMembers = (ms: typeof members) => [...ms].map((m) => ({ ...m, folderid: m.folderid.toLowerCase(), deviationid: m.deviationid.toLowerCase() })).sort((a, b) => memberKey(a).localeCompare(memberKey(b)));
  expect(sortMembers(members)).toEqual(sortMembers(expectedMembers));

  // Notes and messages: every one, by id, with its subject or type.
  const { rows: notes } = await h.pool.query<{ noteid: string; subject: string | null }>("SELECT noteid, subject FROM notes WHERE account_id = $1 AND removed_at IS NULL", [h.account.id]);
  expect(byId(notes, "noteid")).toEqual(byId(truth.notes.map((n) => ({ noteid: n.noteid, subject: n.subject })), "noteid"));
  const { rows: messages } = await h.pool.query<{ messageid: string; type: string | null }>("SELECT messageid, type FROM messages WHERE account_id = $1 AND removed_at IS NULL", [h.account.id]);
  expect(byId(messages, "messageid")).toEqual(byId(truth.messages.map((m) => ({ messageid: m.messageid, type: m.type })), "messageid"));

  // No duplicated rows (keys compared case-insensitively: an id stored twice in two spellings is a duplicate too).
  for (const [table, cols] of [
    ["folder_members", "kind, lower(folderid::text), lower(deviationid::text)"],
    ["deviations", "lower(deviationid::text)"],
    ["notes", "account_id, lower(noteid::text)"],
    ["messages", "account_id, lower(messageid::text)"],
    ["downloads", "lower(deviationid::text), kind"],
  ] as const) {
    const { rows } = await h.pool.query(`SELECT ${cols}, count(*) FROM ${table} GROUP BY ${cols} HAVING count(*) > 1`);
    expect(rows, `duplicated rows in ${table}`).toEqual([]);
  }
  return { deviations: devs.length };
}

async function checkFiles(h: FaultHarness): Promise<number> {
  // Every archived file is whole, and its sha256 is the simulator's.
  const report = await verifyArchive({ deps: h.deps, fix: false, log: createLogger({ level: "silent" }) });
  expect(report.missing).toEqual([]);
  expect(report.corrupt).toEqual([]);
  const { rows: originals } = await h.pool.query<{ deviationid: string; sha256: string }>("SELECT deviationid, sha256 FROM downloads WHERE kind = 'original' AND status = 'done'");
  expect(originals.length).toBeGreaterThan(0);
  for (const o of originals) expect(o.sha256, `sha256 of ${o.deviationid}`).toBe(await h.sim.fileSha256(o.deviationid));
  const { rows: todo } = await h.pool.query("SELECT deviationid, kind, status FROM downloads WHERE status IN ('wanted', 'queued', 'failed')");
  expect(todo).toEqual([]);

  // No temp file left behind.
  const partial = await fs.readdir(path.join(h.archiveDir, PARTIAL_DIR)).catch(() => [] as string[]);
  expect(partial).toEqual([]);
  return report.files;
}
