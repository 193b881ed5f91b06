// The gallery source through the real runner against the simulator: every folder, member, position,
// deviation, metadata and text mirrored field by field; a quiet re-run costs at most two calls; activity
// is recorded exactly (history for edits, removal with a reason on a sweep).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DaClient } from "../../src/api/client.ts";
import { EndpointGoneError } from "../../src/api/errors.ts";
import type { SimDeviation } from "../../src/simulator/dataset.ts";
import type { SourceDefinition } from "../../src/sync/source.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;

/** Runs the source a minute of simulated time after the previous run (the simulator's clock is frozen). */
async function runLater(opts: { full?: boolean } = {}) {
  h.sim.clock.advance(60_000);
  const seq = h.lastSeq();
  const result = await h.runSource("gallery", opts);
  return {
    result,
    calls: h.apiCallsSince(seq),
    routes: h.sim
      .log()
      .filter((e) => e.seq > seq)
      .map((e) => e.route),
  };
}

function ownFolders() {
  return h.sim.truth.galleryFolders.filter((f) => f.ownerId === h.sim.truth.ownerId);
}

function visibleIds(ids: readonly string[]): string[] {
  return ids.filter((id) => h.sim.truth.deviations.get(id)?.isDeleted === false);
}

function epoch(d: { publishedTime: number }): Date {
  return new Date(d.publishedTime * 1000);
}

type MemberRow = { folderid: string; deviationid: string; position: number; removed_at: Date | null };

async function members(): Promise<MemberRow[]> {
  const { rows } = await h.pool.query<MemberRow>(
    "SELECT folderid, deviationid, position, removed_at FROM folder_members WHERE kind = 'gallery' ORDER BY folderid, position",
  );
  return rows;
}

/** What the mirror should hold for the owner's live gallery: members in the service's order, positions counted from each folder's end. */
function expectedMembers(): MemberRow[] {
  return ownFolders()
    .flatMap((f) => {
      const ids = visibleIds(f.deviationIds);
      return ids.map((deviationid, i) => ({ folderid: f.folderid, deviationid, position: i - ids.length, removed_at: null }));
    })
    .sort((a, b) => a.folderid.localeCompare(b.folderid) || a.position - b.position);
}

function expectedDeviation(d: SimDeviation) {
  return {
    deviationid: d.deviationid,
    title: d.title,
    author_userid: d.authorId,
    published_at: epoch(d),
    type: d.kind,
    is_mature: d.isMature,
    is_downloadable: d.isDownloadable,
    removed_at: null,
  };
}

async function history() {
  const { rows } = await h.pool.query<{ deviationid: string; field: string; old_value: unknown; new_value: unknown }>(
    "SELECT deviationid, field, old_value, new_value FROM deviation_history ORDER BY id",
  );
  return rows;
}

describe(gallerySource.name, () => {
  // A fresh mirror and simulator per test: tests change the gallery upstream and count history rows. 200 works in
  // 7 folders, as many as the cases need: the sixth nested, two listing a work deleted since, and the fourth holding
  // 37 that show, so the deep case's last three are past its first page of 24.
  beforeEach(async () => {
    h = await createSyncHarness({ sim: { dataset: { deviations: 200, galleryFolders: 7 } }, sources: [gallerySource] });
  });
  afterEach(async () => {
    await h?.close();
  });

  it("mirrors the gallery on the first run, folder by folder, field by field", async () => {
    const { result } = await runLater();
    expect(result.status).toBe("ok");
    expect(result.full).toBe(true);

    const { rows: folders } = await h.pool.query("SELECT folderid, parent_folderid, name, size, removed_at FROM gallery_folders ORDER BY folderid");
    expect(folders).toEqual(
      ownFolders()
        .map((f) => ({ folderid: f.folderid, parent_folderid: f.parent, name: f.name, size: visibleIds(f.deviationIds).length, removed_at: null }))
        .sort((a, b) => a.folderid.localeCompare(b.folderid)),
    );
    expect(await members()).toEqual(expectedMembers());

    const live = [...new Set(ownFolders().flatMap((f) => visibleIds(f.deviationIds)))].map((id) => h.sim.truth.deviations.get(id) as SimDeviation);
    const { rows: devs } = await h.pool.query(
      "SELECT deviationid, title, author_userid, published_at, type::text AS type, is_mature, is_downloadable, removed_at FROM deviations ORDER BY deviationid",
    );
    expect(devs).toEqual(live.map(expectedDeviation).sort((a, b) => a.deviationid.localeCompare(b.deviationid)));

    const { rows: meta } = await h.pool.query<{ deviationid: string; description: string; tags: string[]; license: string }>(
      "SELECT deviationid, description, tags, license FROM deviation_metadata ORDER BY deviationid",
    );
    expect(meta).toEqual(
      live
        .map((d) => ({ deviationid: d.deviationid, description: d.description, tags: [...new Set(d.tags)].sort(), license: d.license }))
        .sort((a, b) => a.deviationid.localeCompare(b.deviationid)),
    );

    const texts = live.filter((d) => d.text !== null);
    expect(texts.length).toBeGreaterThan(0);
    const { rows: textRows } = await h.pool.query<{ deviationid: string; html: string | null; is_empty: boolean; excerpt: string | null }>(
      "SELECT deviationid, html, is_empty, excerpt FROM deviation_texts ORDER BY deviationid",
    );
    expect(textRows).toEqual(
      texts
        .map((d) => ({
          deviationid: d.deviationid,
          html: d.text?.apiHtmlEmpty ? null : (d.text?.html ?? null),
          is_empty: d.text?.apiHtmlEmpty === true,
          excerpt: d.text?.excerpt ?? null,
        }))
        .sort((a, b) => a.deviationid.localeCompare(b.deviationid)),
    );
    expect(texts.some((d) => d.text?.apiHtmlEmpty)).toBe(true);

    const { rows: downloads } = await h.pool.query<{ deviationid: string; kind: string; status: string; priority: number }>(
      "SELECT deviationid, kind::text AS kind, status::text AS status, priority FROM downloads ORDER BY deviationid, kind",
    );
    const wanted = live
      .flatMap((d) => {
        if (d.kind === "journal" || d.kind === "literature") return [{ deviationid: d.deviationid, kind: "text" }];
        return d.kind === "video" || d.kind === "image" ? [{ deviationid: d.deviationid, kind: "original" }] : [];
      })
      .map((w) => ({ ...w, status: "wanted", priority: 100 }))
      .sort((a, b) => a.deviationid.localeCompare(b.deviationid) || a.kind.localeCompare(b.kind));
    expect(downloads).toEqual(wanted);
    expect(await history()).toEqual([]);

    const state = await h.services.pool.query("SELECT gaps, last_complete_sweep_at FROM sync_sources WHERE source = 'gallery'");
    expect(state.rows[0]?.gaps).toEqual({});
    expect(state.rows[0]?.last_complete_sweep_at).not.toBeNull();
  });

  it("costs at most two API calls when nothing changed upstream", async () => {
    // Up to date with upstream first, whatever ran before (or nothing did): then measure a run with no news.
    await runLater();
    const { result, calls, routes } = await runLater();
    expect(result.status).toBe("ok");
    expect(result.full).toBe(false);
    expect(calls, routes.join("\n")).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });
    expect(await members()).toEqual(expectedMembers());
    expect(await history()).toEqual([]);
  });

  it("picks up a new deviation and a title edit at the top without a sweep", async () => {
    await runLater(); // mirrored before the changes
    const added = h.sim.activity({ kind: "add_deviation", title: "Fresh Upload", deviationKind: "literature" }) as { deviationid: string; folderid: string };
    const top = visibleIds(ownFolders()[2]?.deviationIds ?? [])[0] as string;
    const newest = [...h.sim.truth.deviations.values()]
      .filter((d) => d.authorId === h.sim.truth.ownerId && !d.isDeleted && d.deviationid !== added.deviationid)
      .sort((a, b) => b.publishedTime - a.publishedTime)[0] as SimDeviation;
    h.sim.activity({ kind: "edit_title", deviationid: newest.deviationid, title: "Renamed At The Top" });

    const { result, calls, routes } = await runLater();
    expect(result.full).toBe(false);
    expect(result.counters).toMatchObject({ new: 1, removed: 0 });
    // Folder list, newest page, the changed folder's first two pages, one metadata batch, one text.
    expect(calls, routes.join("\n")).toBeLessThanOrEqual(7);
    expect(await members()).toEqual(expectedMembers());
    const { rows } = await h.pool.query("SELECT title, type::text AS type FROM deviations WHERE deviationid = $1", [added.deviationid]);
    expect(rows).toEqual([{ title: "Fresh Upload", type: "literature" }]);
    const { rows: text } = await h.pool.query("SELECT deviationid FROM deviation_texts WHERE deviationid = $1", [added.deviationid]);
    expect(text).toHaveLength(1);
    const { rows: meta } = await h.pool.query("SELECT deviationid FROM deviation_metadata WHERE deviationid = $1", [added.deviationid]);
    expect(meta).toHaveLength(1);
    expect(await history()).toEqual([{ deviationid: newest.deviationid, field: "title", old_value: expect.any(String), new_value: "Renamed At The Top" }]);
    expect(top).toBeDefined();
  });

  it("records edits and deletions deep in the gallery on a full sweep, and nothing else", async () => {
    await runLater(); // mirrored before the changes
    const before = await history();
    const deep = visibleIds(ownFolders()[3]?.deviationIds ?? []);
    const titled = deep[deep.length - 1] as string;
    const described = deep[deep.length - 2] as string;
    const deleted = deep[deep.length - 3] as string;
    const oldTitle = h.sim.truth.deviations.get(titled)?.title;
    const oldDescription = h.sim.truth.deviations.get(described)?.description;
    h.sim.activity({ kind: "edit_title", deviationid: titled, title: "Deep Rename" });
    h.sim.activity({ kind: "edit_description", deviationid: described, description: "<p>new words</p>" });
    h.sim.activity({ kind: "delete_deviation", deviationid: deleted });

    const { result } = await runLater({ full: true });
    expect(result.status).toBe("ok");
    expect(result.full).toBe(true);
    expect(result.counters).toMatchObject({ new: 0, removed: 1 });
    expect((await history()).slice(before.length)).toEqual(
      expect.arrayContaining([
        { deviationid: titled, field: "title", old_value: oldTitle, new_value: "Deep Rename" },
        { deviationid: described, field: "description", old_value: oldDescription, new_value: "<p>new words</p>" },
      ]),
    );
    expect((await history()).length - before.length).toBe(2);
    const { rows } = await h.pool.query(
      "SELECT removed_reason::text AS reason, removed_at IS NOT NULL AS removed, title FROM deviations WHERE deviationid = $1",
      [deleted],
    );
    expect(rows).toEqual([{ reason: "deleted", removed: true, title: h.sim.truth.deviations.get(deleted)?.title }]);
    const gone = (await members()).filter((m) => m.deviationid === deleted);
    expect(gone.length).toBeGreaterThan(0);
    expect(gone.every((m) => m.removed_at !== null)).toBe(true);
    const live = (await members()).filter((m) => m.removed_at === null).map((m) => ({ ...m }));
    expect(live).toEqual(expectedMembers());
    const { rows: removed } = await h.pool.query("SELECT count(*)::int AS n FROM deviations WHERE removed_at IS NOT NULL");
    expect(removed[0]?.n).toBe(1);
  });

  // docs/service-behaviour.md#tolerant-reading: a work whose entry in a folder's listing could not be read was not
  // seen to leave that folder, so it stays a member.
  it("ends no folder membership on a full sweep that skipped an entry of a folder it could not read", async () => {
    await runLater(); // mirrored whole
    h.sim.faults.add({ route: "/gallery/{folderid}", kind: "broken_item", times: 1 });
    const { result } = await runLater({ full: true });
    expect(result.status).toBe("incomplete");
    // Who is in which folder; the positions after the unreadable entry may be one off until a walk reads it.
    const pairs = (rows: MemberRow[]) => rows.map((m) => `${m.folderid} ${m.deviationid}`).sort();
    expect(pairs((await members()).filter((m) => m.removed_at === null))).toEqual(pairs(expectedMembers()));
  });

  it("runs in the service's current mode without touching a removed endpoint", async () => {
    expect(h.sim.mode).toBe("current");
    await runLater({ full: true });
    await runLater();
    const notFound = h.sim.log().filter((e) => e.status === 404);
    expect(notFound).toEqual([]);
  });
});

describe(`${gallerySource.name} after a failed run`, () => {
  it("resumes the walk from the committed cursor and ends equal to the ground truth", async () => {
    const r = await createSyncHarness({ sim: { dataset: { deviations: 240, galleryFolders: 4 } }, sources: [gallerySource] });
    try {
      // The third folder answers 500 until the transport gives up (1 + 3 retries): the run fails there.
      const third = r.sim.truth.galleryFolders.filter((f) => f.ownerId === r.sim.truth.ownerId)[2];
      r.sim.faults.add({ route: `/gallery/${third?.folderid}`, kind: "status_500", times: 4 });
      r.sim.clock.advance(60_000);
      await expect(r.runSource("gallery")).rejects.toThrow(/HTTP 500/);
      const { rows: state } = await r.pool.query<{ cursor: { run?: { index: number; full: boolean } } }>(
        "SELECT cursor FROM sync_sources WHERE source = 'gallery'",
      );
      expect(state[0]?.cursor.run).toMatchObject({ full: true, index: 2 });
      r.sim.faults.clear();

      r.sim.clock.advance(60_000);
      const seq = r.lastSeq();
      const result = await r.runSource("gallery");
      expect(result.status).toBe("ok");
      expect(result.full).toBe(true);
      const truth = r.sim.truth;
      const folders = truth.galleryFolders.filter((f) => f.ownerId === truth.ownerId);
      const live = (ids: readonly string[]) => ids.filter((id) => truth.deviations.get(id)?.isDeleted === false);
      const pagesTotal = folders.reduce((n, f) => n + Math.max(1, Math.ceil(f.deviationIds.length / 24)), 0);
      const pagesNow = r.sim.log().filter((e) => e.seq > seq && e.route.endsWith("/gallery/{folderid}")).length;
      expect(pagesNow).toBeLessThan(pagesTotal);

      const { rows } = await r.pool.query<{ folderid: string; deviationid: string; position: number }>(
        "SELECT folderid, deviationid, position FROM folder_members WHERE kind = 'gallery' AND removed_at IS NULL ORDER BY folderid, position",
      );
      expect(rows).toEqual(
        folders
          .flatMap((f) => live(f.deviationIds).map((deviationid, i, all) => ({ folderid: f.folderid, deviationid, position: i - all.length })))
          .sort((a, b) => a.folderid.localeCompare(b.folderid) || a.position - b.position),
      );
      const { rows: meta } = await r.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviation_metadata");
      expect(meta[0]?.n).toBe(new Set(folders.flatMap((f) => live(f.deviationIds))).size);
      const { rows: after } = await r.pool.query<{ cursor: { run?: unknown; known?: string } }>("SELECT cursor FROM sync_sources WHERE source = 'gallery'");
      expect(after[0]?.cursor.run).toBeUndefined();
    } finally {
      await r.close();
    }
  });
});

describe(`${gallerySource.name} with /gallery/all removed`, () => {
  it("degrades with the reason and still syncs every changed folder", async () => {
    const gone: SourceDefinition = { ...gallerySource, run: (ctx) => gallerySource.run({ ...ctx, client: withoutGalleryAll(ctx.client) }) };
    const r = await createSyncHarness({ sim: { dataset: { deviations: 120, galleryFolders: 3 } }, sources: [gone] });
    try {
      r.sim.clock.advance(60_000);
      // The first sweep walks every folder; the "all" view, its second witness, is gone.
      const first = await r.runSource("gallery");
      expect(first.status).toBe("degraded");
      expect(first.reason).toBe("gallery.all removed by the service (404 Api endpoint not found.)");
      const added = r.sim.activity({ kind: "add_deviation", title: "Still Found" }) as { deviationid: string };
      r.sim.clock.advance(60_000);
      const result = await r.runSource("gallery");
      expect(result.status).toBe("degraded");
      expect(result.reason).toBe("gallery.all removed by the service (404 Api endpoint not found.)");
      const { rows } = await r.pool.query("SELECT title FROM deviations WHERE deviationid = $1", [added.deviationid]);
      expect(rows).toEqual([{ title: "Still Found" }]);
    } finally {
      await r.close();
    }
  });
});

/** The client as if the service had removed /gallery/all (the simulator has no switch for a live endpoint). */
function withoutGalleryAll(client: DaClient): DaClient {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === "galleryAll") {
        return () => ({
          truncation: undefined,
          [Symbol.asyncIterator]: () => ({
            next: () =>
              Promise.reject(
                new EndpointGoneError({ operation: "gallery.all", status: 404, error: "invalid_request", errorDescription: "Api endpoint not found." }),
              ),
          }),
        });
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
