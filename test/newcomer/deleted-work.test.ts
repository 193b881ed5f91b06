// A work of the owner deleted upstream, tried as a person would with the real CLI (`dvault sync --once`): the
// next incremental run marks it gone, whatever error_code the lookup answers with (0, 1, 2 or none:
// docs/service-behaviour.md#deleted-deviation-lookup), with the answer kept in the row; a lookup that settles
// nothing (the endpoint removed, a 5xx, a 429) leaves the work as it is, says so, and the run after marks it.
// Each test has its own account and first sync, and replays the steps before its own run, so the tests run in
// any order.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DeletedLookup } from "../../src/simulator/dataset.ts";
import type { FaultKind } from "../../src/simulator/faults.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";

let h: DownloadHarness;
/** The owner's live works in their folders' order, newest first: deleting them one by one from the middle. */
let works: string[];
/** What the steps so far deleted: works marked gone, the one whose lookup answers as a removed endpoint, works whose lookup failed with a 5xx, then a throttle. */
let gone: Array<{ id: string; reason: string; code: number | null }>;
let endpointRemoved: string;
let left: string[];

type GalleryRun = {
  code: number | null;
  result: string;
  removed: number;
  reason: string;
  /** API calls of the run, from the simulator's request log. */
  calls: number;
  /** The ids each /deviation/metadata call of the run asked about, and the lookups (/deviation/{deviationid}) it made. */
  metadata: string[][];
  lookups: number;
};

/** `dvault sync --once --only gallery --json`, as cron or a person would run it; the gallery's line of the summary. */
async function syncGallery(): Promise<GalleryRun> {
  const seq = h.lastSeq();
  const run = await runDvault(h, ["sync", "--once", "--only", "gallery", "--json"]);
  expect(run.stderr).toBe("");
  const [line] = JSON.parse(run.stdout) as Array<{ source: string; result: string; removed: number; reason?: string }>;
  expect(line?.source).toBe("gallery");
  const log = h.sim.log().filter((e) => e.seq > seq);
  return {
    code: run.code,
    result: line?.result as string,
    removed: line?.removed as number,
    reason: line?.reason ?? "",
    calls: h.apiCallsSince(seq),
    metadata: log.filter((e) => e.route.endsWith("/deviation/metadata")).map((e) => [e.query["deviationids[]"] ?? []].flat()),
    lookups: log.filter((e) => e.route.endsWith("/deviation/{deviationid}")).length,
  };
}

type Row = { removed: boolean; reason: string | null; answer: unknown };

async function row(id: string): Promise<Row> {
  const { rows } = await h.pool.query<Row>(
    "SELECT removed_at IS NOT NULL AS removed, removed_reason::text AS reason, removed_answer AS answer FROM deviations WHERE deviationid = $1",
    [id],
  );
  return rows[0] as Row;
}

const LIVE: Row = { removed: false, reason: null, answer: null };
const refusal = (errorCode: number | null): DeletedLookup => ({ kind: "refusal", errorCode });
const answered = (errorCode: number | null) => ({ status: 400, error: "invalid_request", error_code: errorCode, error_description: "Deviation not found." });

/** Deletes a work upstream, its lookup answering `lookup`, and, when given, the lookup of that work failing with `fault`. */
function deleteWork(lookup: DeletedLookup, fault?: FaultKind): string {
  const id = works.shift() as string;
  h.sim.activity({ kind: "delete_deviation", deviationid: id, lookup });
  if (fault) h.sim.faults.add({ route: `/deviation/${id}`, kind: fault, times: 5 });
  return id;
}

/** The first step: four works deleted, their lookups answering each error_code, and one whose lookup answers as a removed endpoint. */
function deleteFiveWorks(): void {
  for (const [code, reason] of [
    [0, "deleted"],
    [1, "unavailable"],
    [2, "unavailable"],
    [null, "unavailable"],
  ] as const) {
    gone.push({ id: deleteWork(refusal(code)), reason, code });
  }
  // That one is not an answer about the work.
  endpointRemoved = deleteWork(refusal(2), "gone");
}

/**
 * A step a test builds on: a work deleted whose lookup fails with `fault`, then a run that leaves it as it is. A 5xx
 * may be that work's own, so the asking goes on to the work whose lookup answers as a removed endpoint: degraded.
 */
async function leaveOneWaiting(fault: FaultKind): Promise<void> {
  left.push(deleteWork(refusal(2), fault));
  expect(await syncGallery()).toMatchObject({ code: 0, result: fault === "status_500" ? "degraded" : "incomplete" });
}

/** The steps before the 5xx: the five works deleted and a run that marks four of them. */
async function fiveDeletedAndRun(): Promise<void> {
  deleteFiveWorks();
  expect(await syncGallery()).toMatchObject({ code: 0, result: "degraded" });
}

beforeEach(async () => {
  // The CLI runs on the wall clock: the simulator's is set to now.
  h = await createDownloadHarness({ sim: { dataset: { deviations: 60, galleryFolders: 2, trackedUsers: 0 }, startTime: new Date() } });
  const folders = h.sim.truth.galleryFolders.filter((f) => f.ownerId === h.sim.truth.ownerId);
  // Below each folder's first page, so only the walk's stop at an unchanged page shows which work left.
  works = folders.flatMap((f) => f.deviationIds.filter((id) => h.sim.truth.deviations.get(id)?.isDeleted === false).slice(26));
  expect(works.length).toBeGreaterThanOrEqual(7);
  gone = [];
  endpointRemoved = "";
  left = [];
  // The first sync in this process (the runner the command runs), a child process's start-up less per test.
  const first = await h.runSource("gallery");
  expect(first).toMatchObject({ status: "ok", counters: { removed: 0 } });
}, 60_000);

afterEach(async () => {
  await h?.close();
});

describe("dvault sync --once after a work of the owner was deleted upstream", () => {
  it("marks it gone at the next incremental run, whichever error_code the lookup answers (0, 1, 2 or none), keeping the answer", async () => {
    deleteFiveWorks();

    const run = await syncGallery();
    expect(run.code).toBe(0);
    expect(run.result).toBe("degraded");
    expect(run.reason).toBe(
      "deviation.get removed by the service (404 Api endpoint not found.); 1 work that may be gone upstream could not be asked about; asked again at the next run",
    );
    expect(run.removed).toBe(4);
    for (const g of gone) expect(await row(g.id)).toEqual({ removed: true, reason: g.reason, answer: answered(g.code) });
    expect(await row(endpointRemoved)).toEqual(LIVE);
    // The freshness check's cost (docs/PERFORMANCE.md#freshness): the walk showed which works left, so each was
    // looked up once and no metadata batch asked about them: ⌈n ÷ 50⌉ + (ids left out) + 2 at most.
    expect(run.lookups).toBe(5);
    const deletedIds = new Set([...gone.map((g) => g.id), endpointRemoved]);
    const checkBatches = run.metadata.filter((ids) => ids.some((id) => deletedIds.has(id))).length;
    expect(checkBatches).toBe(0);
    expect(checkBatches + run.lookups).toBeLessThanOrEqual(Math.ceil(60 / 50) + 5 + 2);
  });

  // Each its own run: a throttle ends the asking for that run (the rest wait with it); a 5xx may be the work's own
  // (docs/service-behaviour.md#deleted-deviation-lookup), so the rest are still asked: here the one whose lookup
  // answers as a removed endpoint, which makes the run degraded.
  it.each([
    {
      what: "a 5xx",
      before: [],
      fault: "status_500" as const,
      result: "degraded",
      reason:
        "deviation.get removed by the service (404 Api endpoint not found.); 2 works that may be gone upstream could not be asked about; asked again at the next run",
    },
    {
      what: "a throttle (429)",
      before: ["status_500" as const],
      fault: "user_throttle" as const,
      result: "incomplete",
      reason: "3 works that may be gone upstream could not be asked about (HTTP 429 user_api_threshold); asked again at the next run",
    },
  ])("leaves it as it is when the lookup answers $what, and says it will ask again", async ({ before, fault, result, reason }) => {
    await fiveDeletedAndRun();
    for (const earlier of before) await leaveOneWaiting(earlier);
    const id = deleteWork(refusal(2), fault);
    left.push(id);
    const run = await syncGallery();
    expect(run).toMatchObject({ code: 0, result, removed: 0 });
    expect(run.reason).toBe(reason);
    for (const w of [endpointRemoved, ...left]) expect(await row(w)).toEqual(LIVE);
  });

  it("marks every one of them at the next run once the service answers", async () => {
    await fiveDeletedAndRun();
    await leaveOneWaiting("status_500");
    await leaveOneWaiting("user_throttle");
    h.sim.faults.clear();
    const run = await syncGallery();
    expect(run).toMatchObject({ code: 0, result: "ok", removed: 3, reason: "" });
    for (const id of [endpointRemoved, ...left]) expect(await row(id)).toEqual({ removed: true, reason: "unavailable", answer: answered(2) });
    expect(run.lookups).toBe(3);
    // The four marked before stay as they were.
    for (const g of gone) expect(await row(g.id)).toEqual({ removed: true, reason: g.reason, answer: answered(g.code) });
  });
});
