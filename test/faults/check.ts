// The fault suite's closing check: the mirror against the simulator's ground truth, field by field —
// every deviation of the owner's galleries and collections (title, url, author, published time, type,
// is_mature, is_downloadable, description and tags; deleted favourites as removed stubs), the gallery and
// collection folders and their membership with positions, every note and message — no duplicated rows,
// every archived file's sha256 the simulator's, and no temp file left under the archive's .partial/.
import fs from "node:fs/promises";
import path from "node:path";
import { expect } from "vitest";
import { sortedTags } from "../../src/db/mirror-rows.ts";
import { verifyArchive } from "../../src/downloads/verify.ts";
import { createLogger } from "../../src/log.ts";
import type { SimDeviation } from "../../src/simulator/dataset.ts";
import { deviationUrl } from "../../src/simulator/render.ts";
import type { SimWorld } from "../../src/simulator/world.ts";
import { PARTIAL_DIR } from "../../src/storage/layout.ts";
import type { FaultHarness } from "./harness.ts";

const byId = <T extends Record<string, unknown>>(rows: T[], key: keyof T) => [...rows].sort((a, b) => String(a[key]).localeCompare(String(b[key])));

/** Postgres text cannot hold NUL: the mirror stores it as U+FFFD (docs/schema.md#text-from-the-service). */
const storable = (text: string) => text.replaceAll("\u0000", "\uFFFD");

/** The archive as a whole: the synced mirror, then every file whole and matching, and nothing left half-done. */
export async function checkMirror(h: FaultHarness): Promise<{ deviations: number; files: number }> {
  const { deviations } = await checkSyncedMirror(h);
  return { deviations, files: await checkFiles(h) };
}

type DeviationRow = {
  deviationid: string;
  title: string | null;
  url: string | null;
  author_userid: string | null;
  published_at: Date | null;
  type: string | null;
  is_mature: boolean | null;
  is_downloadable: boolean | null;
  is_deleted: boolean;
  removed_reason: string | null;
  description: string | null;
  tags: string[] | null;
};

type MemberRow = { kind: string; folderid: string; deviationid: string; position: number | null };

/**
 * The mirror equals the simulator's ground truth (the owner's galleries and collections, notes, messages)
 * with no duplicated rows. Listings as the service shows them (docs/service-behaviour.md#deleted-stubs): a gallery skips deleted
 * deviations, a collection lists a deleted favourite as an `is_deleted` stub (so its membership stays,
 * and the deviation is a removed stub) and hides favourites of deactivated artists.
 */
export async function checkSyncedMirror(h: Pick<FaultHarness, "sim" | "pool" | "account">): Promise<{ deviations: number }> {
  const truth = h.sim.truth;
  const dev = (id: string) => truth.deviations.get(id) as SimDeviation;
  const live = (ids: readonly string[]) => ids.filter((id) => truth.deviations.get(id)?.isDeleted === false);
  const listedInCollection = (ids: readonly string[]) => ids.filter((id) => dev(id).isDeleted || !truth.users.get(dev(id).authorId)?.isDeactivated);
  const galleries = truth.galleryFolders.filter((f) => f.ownerId === truth.ownerId);
  const collections = truth.collectionFolders.filter((f) => f.ownerId === truth.ownerId);

  // Deviations of the owner's galleries and collections, field by field (deleted favourites: removed stubs).
  const ids = [...new Set([...galleries.flatMap((f) => live(f.deviationIds)), ...collections.flatMap((f) => listedInCollection(f.deviationIds))])];
  const { rows: devs } = await h.pool.query<DeviationRow>(
    `SELECT v.deviationid, v.title, v.url, v.author_userid, v.published_at, v.type::text AS type, v.is_mature, v.is_downloadable,
            v.is_deleted, v.removed_reason::text AS removed_reason, m.description, m.tags
     FROM deviations v LEFT JOIN deviation_metadata m ON m.deviationid = v.deviationid
     WHERE v.deviationid = ANY($1::text[])`,
    [ids],
  );
  const world = { data: truth } as unknown as SimWorld;
  const expected = (id: string): DeviationRow => {
    const d = dev(id);
    const known = devs.find((r) => r.deviationid === id);
    if (d.isDeleted) {
      // A stub carries nothing else: whatever the mirror knew before the deletion is kept, not compared.
      return { ...(known ?? ({} as DeviationRow)), deviationid: id, is_deleted: true, removed_reason: "deleted" };
    }
    // dataset.hostileData's omitOptional: the service leaves out its optional fields, which the mirror
    // then holds as null (the simulator decides which, so either is accepted for such a deviation).
    const omitted = (d as { quirks?: { omitOptional?: boolean } }).quirks?.omitOptional === true;
    const optional = <T>(value: T): T => (omitted ? (expect.toBeOneOf([value, null]) as T) : value);
    return {
      deviationid: id,
      title: storable(d.title),
      url: deviationUrl(world, d),
      author_userid: d.authorId,
      published_at: optional(new Date(d.publishedTime * 1000)),
      type: d.kind,
      is_mature: optional(d.isMature),
      is_downloadable: optional(d.isDownloadable),
      is_deleted: false,
      removed_reason: null,
      description: optional(storable(d.description)),
      tags: optional(sortedTags(d.tags.map(storable))),
    };
  };
  expect(byId(devs, "deviationid")).toEqual(byId(ids.map(expected), "deviationid"));

  // Folders: the owner's gallery folders (name, parent) and collection folders (name, size).
  const { rows: gFolders } = await h.pool.query<{ folderid: string; name: string | null; parent: string | null }>(
    "SELECT folderid, name, parent_folderid AS parent FROM gallery_folders WHERE owner_userid = $1 AND removed_at IS NULL",
    [truth.ownerId],
  );
  expect(byId(gFolders, "folderid")).toEqual(
    byId(
      galleries.map((f) => ({ folderid: f.folderid, name: storable(f.name), parent: f.parent })),
      "folderid",
    ),
  );
  const { rows: cFolders } = await h.pool.query<{ folderid: string; name: string | null; size: number | null }>(
    "SELECT folderid, name, size FROM collection_folders WHERE owner_userid = $1 AND removed_at IS NULL",
    [truth.ownerId],
  );
  expect(byId(cFolders, "folderid")).toEqual(
    byId(
      collections.map((f) => ({ folderid: f.folderid, name: storable(f.name), size: f.deviationIds.length })),
      "folderid",
    ),
  );

  // Folder membership with positions counted from each folder's end (-size for the first, -1 for the last): a
  // gallery folder's count is of its live deviations, a collection's of every favourite (its size).
  const expectedMembers: MemberRow[] = [
    ...galleries.flatMap((f) => {
      const members = live(f.deviationIds);
      return members.map((deviationid, i) => ({ kind: "gallery", folderid: f.folderid, deviationid, position: i - members.length }));
    }),
    ...collections.flatMap((f) =>
      listedInCollection(f.deviationIds).map((deviationid, i) => ({
        kind: "collection",
        folderid: f.folderid,
        deviationid,
        position: i - f.deviationIds.length,
      })),
    ),
  ];
  const { rows: members } = await h.pool.query<MemberRow>(
    "SELECT kind::text AS kind, folderid, deviationid, position FROM folder_members WHERE removed_at IS NULL AND kind IN ('gallery', 'collection')",
  );
  const memberKey = (m: MemberRow) => `${m.kind}/${m.folderid}/${m.deviationid}`.toLowerCase();
  const sortMembers = (ms: MemberRow[]) =>
    [...ms]
      .map((m) => ({ ...m, folderid: m.folderid.toLowerCase(), deviationid: m.deviationid.toLowerCase() }))
      .sort((a, b) => memberKey(a).localeCompare(memberKey(b)));
  expect(sortMembers(members)).toEqual(sortMembers(expectedMembers));

  // Notes and messages: every one, by id, with its subject or type.
  const { rows: notes } = await h.pool.query<{ noteid: string; subject: string | null }>(
    "SELECT noteid, subject FROM notes WHERE account_id = $1 AND removed_at IS NULL",
    [h.account.id],
  );
  expect(byId(notes, "noteid")).toEqual(
    byId(
      truth.notes.map((n) => ({ noteid: n.noteid, subject: n.subject })),
      "noteid",
    ),
  );
  const { rows: messages } = await h.pool.query<{ messageid: string; type: string | null }>(
    "SELECT messageid, type FROM messages WHERE account_id = $1 AND removed_at IS NULL",
    [h.account.id],
  );
  expect(byId(messages, "messageid")).toEqual(
    byId(
      truth.messages.map((m) => ({ messageid: m.messageid, type: m.type })),
      "messageid",
    ),
  );

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
  const { rows: originals } = await h.pool.query<{ deviationid: string; sha256: string }>(
    "SELECT deviationid, sha256 FROM downloads WHERE kind = 'original' AND status = 'done'",
  );
  expect(originals.length).toBeGreaterThan(0);
  for (const o of originals) expect(o.sha256, `sha256 of ${o.deviationid}`).toBe(await h.sim.fileSha256(o.deviationid));
  const { rows: todo } = await h.pool.query("SELECT deviationid, kind, status FROM downloads WHERE status IN ('wanted', 'queued', 'failed')");
  expect(todo).toEqual([]);

  // No temp file left behind.
  const partial = await fs.readdir(path.join(h.archiveDir, PARTIAL_DIR)).catch(() => [] as string[]);
  expect(partial).toEqual([]);
  return report.files;
}
