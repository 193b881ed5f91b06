// Freshness of the folder sources (src/sync/sources/freshness.ts, vanished.ts) through the real runner against
// the simulator: a work deleted upstream is marked gone by the next incremental run, with the service's answer,
// for every answer the public record allows (docs/service-behaviour.md#deleted-deviation-lookup); answers that
// settle nothing leave the work as it is and are asked again; the asking costs no more than the issue's budget
// (⌈n ÷ 50⌉ + ids left out + 2 calls), and a quiet run nothing more at all.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DeletedLookup } from "../../src/simulator/dataset.ts";
import type { FaultRule } from "../../src/simulator/faults.ts";
import type { SourceDefinition } from "../../src/sync/source.ts";
import { collectionsSource } from "../../src/sync/sources/collections.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { profileSource } from "../../src/sync/sources/profile.ts";
import { resolveWorks, type Resolution } from "../../src/sync/sources/vanished.ts";
import { createSyncHarness, runSourceLater, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;

function ownFolders() {
  return h.sim.truth.galleryFolders.filter((f) => f.ownerId === h.sim.truth.ownerId);
}

function live(ids: readonly string[]): string[] {
  return ids.filter((id) => h.sim.truth.deviations.get(id)?.isDeleted === false);
}

/** The owner's live works, filed or not. */
function liveWorks(): string[] {
  const unfiled = h.sim.truth.unfiled.get(h.sim.truth.ownerId) ?? [];
  return [...new Set(live([...ownFolders().flatMap((f) => f.deviationIds), ...unfiled]))];
}

/** A work in the middle of the biggest folder, below its first page: only the walk's boundary shows it left. */
function deepWork(): { id: string; folderid: string } {
  const folder = [...ownFolders()].sort((a, b) => live(b.deviationIds).length - live(a.deviationIds).length)[0];
  const ids = live(folder?.deviationIds ?? []);
  expect(ids.length).toBeGreaterThan(30);
  return { id: ids[30] as string, folderid: folder?.folderid as string };
}

type GoneRow = { reason: string | null; answer: unknown; live_members: number };

async function row(id: string): Promise<GoneRow> {
  const { rows } = await h.pool.query<GoneRow>(
    `SELECT removed_reason::text AS reason, removed_answer AS answer,
       (SELECT count(*) FROM folder_members m WHERE m.deviationid = d.deviationid AND m.removed_at IS NULL)::int AS live_members
     FROM deviations d WHERE deviationid = $1`,
    [id],
  );
  return rows[0] as GoneRow;
}

/** The reason of the gallery source's "unsettled" gap, if it has one. */
async function unsettledGap(): Promise<string | undefined> {
  const { rows } = await h.pool.query<{ reason: string | null }>(
    "SELECT gaps -> 'unsettled' ->> 'reason' AS reason FROM sync_sources WHERE source = 'gallery'",
  );
  return rows[0]?.reason ?? undefined;
}

const refusal = (errorCode: number | null): DeletedLookup => ({ kind: "refusal", errorCode });
const answer = (errorCode: number | null) => ({
  status: 400,
  error: "invalid_request",
  error_code: errorCode,
  error_description: "Deviation not found.",
});

describe("a work deleted upstream, at the next incremental run of the gallery", () => {
  beforeEach(async () => {
    // 120 works in 3 folders: the biggest holds 63, so deepWork's 31st is on its folder's second page (24 a page).
    // The pacer's hold after a refusal (1 s at first, src/api/pacer.ts) made short: no case here is about how long it holds.
    h = await createSyncHarness({
      sim: { dataset: { deviations: 120, galleryFolders: 3 } },
      sources: [gallerySource],
      overrides: { pacer: { holdMs: 5, maxHoldMs: 50 } },
    });
    await runSourceLater(h, "gallery"); // the first run: a sweep
  });
  afterEach(async () => {
    await h?.close();
  });

  it("costs nothing more than a quiet run when nothing changed", async () => {
    const quiet = await runSourceLater(h, "gallery");
    expect(quiet.result.full).toBe(false);
    expect(quiet.routes.filter((r) => r.includes("/deviation/"))).toEqual([]);
    expect(quiet.calls, quiet.routes.join("\n")).toBeLessThanOrEqual(2);
  });

  it.each([
    { lookup: refusal(0), reason: "deleted", answer: answer(0) },
    { lookup: refusal(1), reason: "unavailable", answer: answer(1) },
    { lookup: refusal(2), reason: "unavailable", answer: answer(2) },
    { lookup: refusal(null), reason: "unavailable", answer: answer(null) },
    { lookup: { kind: "stub" } as DeletedLookup, reason: "deleted", answer: { status: 200, is_deleted: true } },
  ])("is marked $reason when the lookup answers $lookup, with that answer", async ({ lookup, reason, answer }) => {
    const { id } = deepWork();
    h.sim.activity({ kind: "delete_deviation", deviationid: id, lookup });

    const seq = h.lastSeq();
    const run = await runSourceLater(h, "gallery");
    expect(run.result.full).toBe(false);
    expect(run.result.status).toBe("ok");
    expect(run.result.counters.removed).toBe(1);
    expect(await row(id)).toEqual({ reason, answer, live_members: 0 });
    // The walk showed which work left: it alone was looked up, and no metadata batch asked about it (the
    // asking cost one call: ⌈n ÷ 50⌉ + 1 + 2 would be allowed).
    expect(run.routes.filter((r) => r.startsWith("/api/v1/oauth2/deviation/{deviationid}"))).toEqual([
      `/api/v1/oauth2/deviation/{deviationid} ${lookup.kind === "stub" ? 200 : 400}`,
    ]);
    const asked = h.sim.log().filter((e) => e.seq > seq && e.route.endsWith("/deviation/metadata") && [e.query["deviationids[]"]].flat().includes(id));
    expect(asked).toEqual([]);
  });

  it.each([
    { fault: { kind: "gone" } as const, status: "degraded", cause: /deviation\.get removed by the service \(404 Api endpoint not found\.\)/ },
    { fault: { kind: "user_throttle" } as const, status: "incomplete", cause: /HTTP 429 user_api_threshold/ },
    { fault: { kind: "status_503" } as const, status: "incomplete", cause: /HTTP 503/ },
    { fault: { kind: "status_500" } as const, status: "incomplete", cause: /HTTP 500/ },
  ])("is left as it is when the lookup answers $fault.kind, and marked at the run after", async ({ fault, status, cause }) => {
    const { id } = deepWork();
    h.sim.activity({ kind: "delete_deviation", deviationid: id, lookup: refusal(2) });
    h.sim.faults.add({ ...fault, route: "/deviation/{deviationid}" } as FaultRule);

    const run = await runSourceLater(h, "gallery");
    expect(run.result.status).toBe(status);
    expect(run.result.reason).toMatch(cause);
    expect(run.result.reason).toMatch(/1 work that may be gone upstream could not be asked about.*; asked again at the next run/);
    expect(run.result.counters.removed).toBe(0);
    const left = await row(id);
    expect({ reason: left.reason, answer: left.answer }).toEqual({ reason: null, answer: null });
    // Status and the digest read why from the source's gaps.
    expect(await unsettledGap()).toMatch(/^1 work that may be gone upstream could not be asked about/);

    h.sim.faults.clear();
    const next = await runSourceLater(h, "gallery");
    expect(next.result.status).toBe("ok");
    expect(await unsettledGap()).toBeUndefined();
    expect(next.result.counters.removed).toBe(1);
    expect(await row(id)).toEqual({ reason: "unavailable", answer: answer(2), live_members: 0 });
    // Settled: the run after that asks nothing.
    const after = await runSourceLater(h, "gallery");
    expect(after.routes.filter((r) => r.includes("/deviation/"))).toEqual([]);
  });
});

describe("a work in no folder deleted upstream", () => {
  beforeEach(async () => {
    // Variance files some works in no folder (docs/service-behaviour.md#folders-optional): only the "all" view
    // lists them, and only the profile's count says one went when it was not on the view's first page.
    // 150 works, 43 of them in no folder: the oldest is below the "all" view's first page (24 a page), and asking
    // about every work takes more than one call of 50.
    h = await createSyncHarness({ sim: { seed: 7, variance: true, dataset: { deviations: 150, galleryFolders: 3 } }, sources: [profileSource, gallerySource] });
    await runSourceLater(h, "profile");
    await runSourceLater(h, "gallery");
  });
  afterEach(async () => {
    await h?.close();
  });

  function unfiled(): string[] {
    return live(h.sim.truth.unfiled.get(h.sim.truth.ownerId) ?? []);
  }

  it("deep in the gallery: the profile's count drops and every work is asked about, 50 at a time", async () => {
    const quiet = await runSourceLater(h, "gallery");
    const ids = unfiled();
    const id = ids[ids.length - 1] as string;
    const n = liveWorks().length;
    h.sim.activity({ kind: "delete_deviation", deviationid: id, lookup: refusal(null) });
    await runSourceLater(h, "profile");

    const run = await runSourceLater(h, "gallery");
    expect(run.result.full).toBe(false);
    expect(run.result.counters.removed).toBe(1);
    expect((await row(id)).reason).toBe("unavailable");
    // No listing showed it leave: every other work was asked about, 50 a call, and the one left out looked up.
    const metadata = run.routes.filter((r) => r.startsWith("/api/v1/oauth2/deviation/metadata"));
    expect(metadata.length).toBeGreaterThan(0);
    expect(metadata.length).toBeLessThanOrEqual(Math.ceil(n / 50));
    expect(run.routes.filter((r) => r.startsWith("/api/v1/oauth2/deviation/{deviationid}"))).toEqual(["/api/v1/oauth2/deviation/{deviationid} 400"]);
    expect(run.calls - quiet.calls, run.routes.join("\n")).toBeLessThanOrEqual(Math.ceil(n / 50) + 1 + 2);
    // The count it saw is the one the next run compares with: nothing more is asked.
    const next = await runSourceLater(h, "gallery");
    expect(next.routes.filter((r) => r.includes("/deviation/"))).toEqual([]);
  });

  it("near the top: the 'all' view's first page shows it left, and only it is asked about", async () => {
    const newestUnfiled = unfiled()[0] as string;
    const top = (await h.pool.query<{ cursor: { top?: string } }>("SELECT cursor FROM sync_sources WHERE source = 'gallery'")).rows[0]?.cursor.top ?? "";
    expect(top.split(",")).toContain(newestUnfiled);
    h.sim.activity({ kind: "delete_deviation", deviationid: newestUnfiled, lookup: refusal(0) });

    const run = await runSourceLater(h, "gallery");
    expect(run.result.counters.removed).toBe(1);
    expect((await row(newestUnfiled)).reason).toBe("deleted");
    expect(run.routes.filter((r) => r.includes("/deviation/"))).toEqual(["/api/v1/oauth2/deviation/{deviationid} 400"]);
  });
});

describe("a favourite that left the favourites' first page", () => {
  beforeEach(async () => {
    h = await createSyncHarness({ sim: { dataset: { favourites: 120, collectionFolders: 3 } }, sources: [profileSource, collectionsSource] });
    await runSourceLater(h, "profile");
    await runSourceLater(h, "collections");
  });
  afterEach(async () => {
    await h?.close();
  });

  /** The newest favourite of the "all" view's first page by someone else than the owner. */
  async function topFavourite(): Promise<{ id: string; author: string }> {
    const { rows } = await h.pool.query<{ cursor: { top?: string } }>("SELECT cursor FROM sync_sources WHERE source = 'collections'");
    const ids = (rows[0]?.cursor.top ?? "").split(",");
    const d = ids.map((id) => h.sim.truth.deviations.get(id)).find((x) => x && !x.isDeleted && x.authorId !== h.sim.truth.ownerId);
    expect(d).toBeDefined();
    return { id: d?.deviationid as string, author: h.sim.truth.users.get(d?.authorId as string)?.username as string };
  }

  it("an unfaved favourite leaves its folder and is asked about once; the profile's lower count needs nothing more", async () => {
    const folders = h.sim.truth.collectionFolders.filter((f) => f.ownerId === h.sim.truth.ownerId);
    const biggest = [...folders].sort((a, b) => b.deviationIds.length - a.deviationIds.length)[0];
    // In this folder alone: the profile's count then drops by one (the simulator counts a favourite once per folder).
    const id = biggest?.deviationIds
      .slice(30)
      .find((x) => h.sim.truth.deviations.get(x)?.isDeleted === false && folders.filter((f) => f.deviationIds.includes(x)).length === 1) as string;
    expect(id).toBeDefined();
    const { access_token } = h.sim.issueUserToken();
    const unfave = await fetch(`${h.sim.apiUrl}/collections/unfave`, {
      method: "POST",
      headers: { authorization: `Bearer ${access_token}`, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ deviationid: id }),
    });
    expect(unfave.status).toBe(200);
    await runSourceLater(h, "profile");

    const run = await runSourceLater(h, "collections");
    expect(run.result).toMatchObject({ status: "ok", counters: { removed: 0 } });
    expect(run.routes.filter((r) => r.includes("/deviation/{deviationid}"))).toEqual(["/api/v1/oauth2/deviation/{deviationid} 200"]);
    // No batch over every favourite: the one that left accounts for the count.
    expect(run.routes.filter((r) => r.includes("/deviation/metadata")).length).toBeLessThanOrEqual(1);
    expect(await row(id)).toEqual({ reason: null, answer: null, live_members: 0 });
  });

  it("a favourite whose artist deactivated still answers: it is marked with the artist's state", async () => {
    const { id, author } = await topFavourite();
    h.sim.activity({ kind: "deactivate_user", username: author });

    const run = await runSourceLater(h, "collections");
    expect(run.routes).toContain("/api/v1/oauth2/deviation/{deviationid} 200");
    expect((await row(id)).reason).toBe("artist_deactivated");
  });
});

describe(resolveWorks.name, () => {
  it("keeps the author check: a work refused while its artist is suspended is marked with the artist's state, never deleted", async () => {
    let resolution: Resolution | undefined;
    let ids: string[] = [];
    // The resolution alone, through the real runner: a source that only asks about `ids`.
    const asking: SourceDefinition = {
      ...gallerySource,
      run: async (ctx) => {
        resolution = await resolveWorks(ctx, ids, { ownerUserid: ctx.account.userId, viaMetadata: true });
        return { result: "ok" };
      },
    };
    h = await createSyncHarness({ sim: { dataset: { favourites: 40, collectionFolders: 1 } }, sources: [collectionsSource, asking] });
    try {
      await runSourceLater(h, "collections");
      const faves = h.sim.truth.collectionFolders.filter((f) => f.ownerId === h.sim.truth.ownerId).flatMap((f) => f.deviationIds);
      const theirs = faves.map((id) => h.sim.truth.deviations.get(id)).filter((d) => d !== undefined && !d.isDeleted && d.authorId !== h.sim.truth.ownerId);
      const [suspended, deleted] = theirs.filter((d, i, all) => all.findIndex((x) => x?.authorId === d?.authorId) === i);
      const author = h.sim.truth.users.get(suspended?.authorId as string)?.username as string;
      h.sim.activity({ kind: "suspend_user", username: author });
      h.sim.activity({ kind: "delete_deviation", deviationid: suspended?.deviationid as string, lookup: refusal(0) });
      h.sim.activity({ kind: "delete_deviation", deviationid: deleted?.deviationid as string, lookup: refusal(0) });
      ids = [suspended?.deviationid as string, deleted?.deviationid as string];

      const run = await runSourceLater(h, "gallery");
      expect(run.routes.filter((r) => r.includes("/user/profile/"))).toEqual([
        "/api/v1/oauth2/user/profile/{username} 400",
        "/api/v1/oauth2/user/profile/{username} 200",
      ]);
      expect(resolution).toMatchObject({ alive: [], unsettled: [], stopped: false });
      expect(resolution?.gone.sort()).toEqual([...ids].sort());
      expect((await row(ids[0] as string)).reason).toBe("artist_suspended");
      expect(await row(ids[1] as string)).toMatchObject({ reason: "deleted", answer: answer(0) });
    } finally {
      await h.close();
    }
  });
});
