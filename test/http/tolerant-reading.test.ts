// Reading what the service sends, tolerantly (docs/service-behaviour.md#tolerant-reading), through the real
// transport over sockets: the bucket page under either key, one broken item recorded and skipped while
// the rest of the page is read, a page of the wrong shape read twice then recorded and skipped, and a
// write (notes/send) that partly succeeds read per recipient and never sent twice.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DaClient } from "../../src/api/client.ts";
import { ApiError, isPermanent } from "../../src/api/errors.ts";
import { createHttpTransport } from "../../src/api/http.ts";
import { createPacer } from "../../src/api/pacer.ts";
import { staticTokenProvider } from "../../src/api/token-provider.ts";
import type { UnreadableReport } from "../../src/api/transport.ts";
import { createLogger } from "../../src/log.ts";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { createPacerStores, type PacerStores } from "../helpers/pacer-stores.ts";

let r: PacerStores;
let run = 0;

beforeAll(async () => {
  r = await createPacerStores(TEST_ENGINE);
});
afterAll(async () => {
  await r.cleanup();
});

/** A client on the simulator's owner, recording what it could not read. */
function clientFor(sim: Simulator) {
  const reports: UnreadableReport[] = [];
  const transport = createHttpTransport({
    apiBase: sim.url,
    tokens: staticTokenProvider(sim.issueUserToken().access_token, { kind: "user", clientId: "1001", userId: sim.truth.ownerId, account: "owner" }),
    pacer: createPacer({ store: r.store(`${r.namespace}:${++run}`) }),
    log: createLogger({ level: "silent" }),
    retry: { baseDelayMs: 5 },
    unreadable: { record: async (report) => void reports.push(report) },
  });
  return { client: new DaClient(transport), transport, reports };
}

const calls = (sim: Simulator, route: string) => sim.log().filter((e) => e.route.endsWith(route)).length;

describe("bucket pages under either key", () => {
  // Two seeds whose variance draws each key (docs/service-behaviour.md#feed-bucket-page-key).
  for (const key of ["results", "items"] as const) {
    it(`reads /feed/home/{bucketid} answered under "${key}"`, async () => {
      let sim: Simulator | undefined;
      for (let seed = 1; !sim; seed++) {
        const candidate = await startSimulator({ seed, variance: true, dataset: { deviations: 20, feedItems: 12 } });
        if (candidate.variance.bucketKey === key) sim = candidate;
        else await candidate.close();
      }
      try {
        const { client, reports } = clientFor(sim);
        const item = sim.truth.feed.find((f) => f.deviationIds.length > 1)!;
        const ids: string[] = [];
        for await (const page of client.feedHomeBucket(item.bucketid)) ids.push(...page.items.map((d) => d.deviationid));
        expect(ids.length).toBeGreaterThan(0);
        expect(ids.every((id) => item.deviationIds.includes(id))).toBe(true);
        expect(reports).toEqual([]);
      } finally {
        await sim.close();
      }
    });
  }
});

describe("unreadable answers", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 5, dataset: { deviations: 60, galleryFolders: 2 } });
  });
  afterAll(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.faults.clear();
    sim.clearLog();
  });

  it("records one broken item and reads the rest of its page", async () => {
    const { client, transport, reports } = clientFor(sim);
    sim.faults.add({ route: "/gallery/all", kind: "broken_item", times: 1 });
    const pages = client.galleryAll({ limit: 24 });
    const got: string[] = [];
    for await (const page of pages) got.push(...page.items.map((d) => d.deviationid));
    const all = sim.truth.galleryFolders.flatMap((f) => (f.ownerId === sim.truth.ownerId ? f.deviationIds : []));
    const live = [...new Set(all)].filter((id) => !sim.truth.deviations.get(id)!.isDeleted);
    // Every page was read; only the broken item is missing.
    expect(got).toHaveLength(live.length - 1);
    expect(pages.skipped).toEqual({ pages: 0, items: 1 });
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ operation: "gallery.all", subject: "item #0", detail: expect.stringMatching(/unexpected shape at deviationid/) });
    expect((reports[0]!.raw as Record<string, unknown>).deviationid).toBeNull();
    expect(transport.stats.unreadable).toEqual({ responses: 0, items: 1 });
  });

  it("reads a page of the wrong shape again; twice wrong, records it and goes on after it", async () => {
    const { client, reports } = clientFor(sim);
    sim.faults.add({ route: "/gallery/all", kind: "wrong_shape", times: 2 });
    const pages = client.galleryAll({ limit: 24 });
    const offsets: number[] = [];
    for await (const page of pages) offsets.push(page.offset ?? -1);
    // The first page (offset 0) was skipped after two readings; the listing went on from offset 24.
    expect(offsets[0]).toBe(24);
    expect(pages.skipped).toEqual({ pages: 1, items: 0 });
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ subject: "", detail: expect.stringMatching(/no array of items/) });
    expect(sim.log().filter((e) => e.route.endsWith("/gallery/all") && e.query.offset === "0")).toHaveLength(2);
  });

  it("a page of the wrong shape once is read again, and then read whole", async () => {
    const { client, reports } = clientFor(sim);
    sim.faults.add({ route: "/gallery/all", kind: "wrong_shape", times: 1 });
    const pages = client.galleryAll({ limit: 24 });
    const offsets: number[] = [];
    for await (const page of pages) offsets.push(page.offset ?? -1);
    expect(offsets[0]).toBe(0);
    expect(pages.skipped).toEqual({ pages: 0, items: 0 });
    expect(reports).toEqual([]);
  });

  it("a single answer of the wrong shape twice is final for that request, and recorded", async () => {
    const { client, reports } = clientFor(sim);
    sim.faults.add({ route: "/deviation/metadata", kind: "wrong_shape", times: 2 });
    const id = sim.truth.galleryFolders[0]!.deviationIds[0]!;
    const err = await client.deviationMetadataAll([id]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).kind).toBe("malformed");
    expect(isPermanent(err)).toBe(true);
    expect(reports).toHaveLength(1);
    expect(calls(sim, "/deviation/metadata")).toBe(2);
  });
});

describe("notes/send", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 9, dataset: { deviations: 10 } });
  });
  afterAll(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.faults.clear();
    sim.clearLog();
  });

  it("reads a partial success per recipient, in one request (docs/service-behaviour.md#note-send-per-recipient)", async () => {
    const { client, reports } = clientFor(sim);
    const known = [...sim.truth.users.values()].find((u) => u.userid !== sim.truth.ownerId)!;
    const result = await client.noteSend({ to: [known.username, "nobody-by-this-name"], subject: "hi", body: "hello" });
    expect(result.results).toHaveLength(2);
    expect(result.results[0]).toMatchObject({ success: true, user: { username: known.username } });
    expect(result.results[1]).toMatchObject({ success: false, user: { userid: null, username: "nobody-by-this-name" } });
    expect(calls(sim, "/notes/send")).toBe(1);
    expect(reports).toEqual([]);
  });

  it("never sends a write again when its answer cannot be read: recorded, final", async () => {
    const { client, reports } = clientFor(sim);
    sim.faults.add({ route: "/notes/send", kind: "wrong_shape", times: 5 });
    const known = [...sim.truth.users.values()].find((u) => u.userid !== sim.truth.ownerId)!;
    const err = await client.noteSend({ to: [known.username], body: "once" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(isPermanent(err)).toBe(true);
    expect(calls(sim, "/notes/send")).toBe(1);
    expect(reports).toHaveLength(1);
    // It was sent once, and (as the service does) carried out.
    expect(sim.truth.notes.filter((n) => n.body === "once")).toHaveLength(1);
  });

  it("never sends a write again after a 500 either", async () => {
    const { client } = clientFor(sim);
    sim.faults.add({ route: "/notes/send", kind: "status_500", times: 5 });
    const known = [...sim.truth.users.values()].find((u) => u.userid !== sim.truth.ownerId)!;
    await expect(client.noteSend({ to: [known.username], body: "x" })).rejects.toBeInstanceOf(ApiError);
    expect(calls(sim, "/notes/send")).toBe(1);
  });
});
