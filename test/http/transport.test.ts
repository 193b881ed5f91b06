// The HTTP transport against the simulator over real sockets, with the pacer on the run's engine (Redis, or PostgreSQL alone).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ApiError, EndpointGoneError, isPermanent, ThrottleDelayError } from "../../src/api/errors.ts";
import { TokenRefreshDeferredError } from "../../src/api/token-errors.ts";
import { createHttpTransport, type HttpTransportOptions } from "../../src/api/http.ts";
import { createPacer, type PacerOptions } from "../../src/api/pacer.ts";
import { staticTokenProvider, type TokenIdentity, type TokenProvider } from "../../src/api/token-provider.ts";
import { readWhole, type ApiRequest } from "../../src/api/transport.ts";
import { createLogger } from "../../src/log.ts";
import { startSimulator, type RequestLogEntry, type Simulator } from "../../src/simulator/server.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { createPacerStores, type PacerStores } from "../helpers/pacer-stores.ts";

// Long enough that a loaded machine's event-loop stall does not outlast a hold (at 50 ms, a run at load 13 on 2 cores
// saw one retry arrive after its hold had ended, so the pacer did not count it as paced).
const BASE_MS = 150;
const Any = z.looseObject({});
const Deviation = z.looseObject({ deviationid: z.string() });
const placebo: ApiRequest = { operation: "placebo", method: "GET", path: "/placebo" };

let sim: Simulator;
let r: PacerStores;
let run = 0;

beforeAll(async () => {
  [sim, r] = await Promise.all([startSimulator({ seed: 7 }), createPacerStores(TEST_ENGINE)]);
});
afterAll(async () => {
  await Promise.all([sim.close(), r.cleanup()]);
});
beforeEach(() => {
  sim.faults.clear();
  sim.clearLog();
});

function identity(): TokenIdentity {
  return { kind: "user", clientId: "1001", userId: sim.truth.ownerId, account: "owner" };
}

function captureLog() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { log: createLogger({ level: "debug", destination, pretty: false }), lines };
}

/** A transport with its own pacer state (a fresh namespace per call), fast retry delays and no jitter. */
function setup(opts: { tokens?: TokenProvider; pacer?: Partial<PacerOptions>; transport?: Partial<HttpTransportOptions> } = {}) {
  const token = sim.issueUserToken().access_token;
  const tokens = opts.tokens ?? staticTokenProvider(token, identity());
  const pacer = createPacer({
    store: r.store(`${r.namespace}:${++run}`),
    holdMs: BASE_MS,
    jitter: 0,
    startRate: 1000,
    maxRate: 1000,
    pollMs: 5,
    ...opts.pacer,
  });
  const { log, lines } = captureLog();
  const transport = createHttpTransport({
    apiBase: sim.url,
    tokens,
    pacer,
    log,
    retry: { baseDelayMs: 10 },
    maxWaitMs: 10_000,
    ...opts.transport,
  });
  return { transport, pacer, token, lines };
}

const apiLog = (): RequestLogEntry[] => sim.log().filter((e) => e.path.startsWith("/api/"));
const deltas = (entries: RequestLogEntry[]) => entries.slice(1).map((e, i) => e.realMs - entries[i]!.realMs);

function visibleGalleryIds(): string[] {
  const ids = new Set<string>();
  for (const f of sim.truth.galleryFolders) {
    if (f.ownerId !== sim.truth.ownerId) continue;
    for (const id of f.deviationIds) if (!sim.truth.deviations.get(id)?.isDeleted) ids.add(id);
  }
  return [...ids];
}

describe("HTTP transport: paging", () => {
  it("pages a 500-item gallery to the end, following next_offset verbatim", async () => {
    const { transport } = setup();
    const pages = transport.paginateOffset({ operation: "gallery.all", method: "GET", path: "/gallery/all", query: { mature_content: true } }, Deviation, {
      limit: 24,
    });
    const seen: string[] = [];
    const offsets: Array<[number | undefined, number | null | undefined]> = [];
    for await (const page of pages) {
      seen.push(...page.items.map((d) => d.deviationid));
      offsets.push([page.offset, page.nextOffset]);
    }
    expect(sim.truth.size.deviations).toBe(500);
    expect(seen.sort()).toEqual(visibleGalleryIds().sort());
    expect(pages.truncation).toBeUndefined();
    // Each request asked for the offset the previous page named.
    const requested = apiLog().map((e) => Number(e.query.offset));
    expect(requested).toEqual(offsets.map(([offset]) => offset));
    for (let i = 1; i < offsets.length; i++) expect(offsets[i]![0]).toBe(offsets[i - 1]![1]);
    expect(offsets.at(-1)![1]).toBeNull();
    expect(apiLog().every((e) => e.query.limit === "24" && e.query.mature_content === "true")).toBe(true);
  });

  it("pages every gallery folder and reads the folder name from the raw page", async () => {
    const { transport } = setup();
    const folders = sim.truth.galleryFolders.filter((f) => f.ownerId === sim.truth.ownerId);
    for (const folder of folders) {
      const ids: string[] = [];
      for await (const page of transport.paginateOffset(
        { operation: "gallery.folder", method: "GET", path: `/gallery/${folder.folderid}`, query: { mature_content: true } },
        Deviation,
        { limit: 24 },
      )) {
        expect(page.raw.name).toBe(folder.name);
        ids.push(...page.items.map((d) => d.deviationid));
      }
      expect(ids).toEqual(folder.deviationIds.filter((id) => !sim.truth.deviations.get(id)?.isDeleted));
    }
  });

  it("follows cursors to the end", async () => {
    const { transport } = setup();
    const pages = transport.paginateCursor(
      { operation: "user.profile.posts", method: "GET", path: "/user/profile/posts", query: { username: sim.truth.users.get(sim.truth.ownerId)!.username } },
      Any,
      { limit: 5 },
    );
    const cursors: Array<string | undefined> = [];
    let last: { hasMore: boolean; nextCursor?: string | null | undefined } | undefined;
    for await (const page of pages) {
      cursors.push(page.cursor);
      last = page;
    }
    expect(cursors.length).toBeGreaterThan(1);
    expect(cursors[0]).toBeUndefined();
    expect(last?.hasMore).toBe(false);
    expect(apiLog().map((e) => e.query.cursor)).toEqual(cursors);
  });

  // docs/service-behaviour.md#cursor-end: a cursor handed back again would read the same pages for ever; the walk
  // ends there with the rest recorded as unread (readWhole false), so nothing after it is taken for gone.
  it("ends a cursor walk whose cursors come round again, with the rest recorded as unread", async () => {
    const asked: string[] = [];
    const server = http.createServer((req, res) => {
      const cursor = new URL(req.url ?? "/", "http://local").searchParams.get("cursor") ?? "";
      asked.push(cursor);
      const next = cursor === "a" ? "b" : "a";
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ has_more: true, next_cursor: next, results: [{ cursor }] }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { transport } = setup({ transport: { apiBase: `http://127.0.0.1:${(server.address() as AddressInfo).port}` } });
      const pages = transport.paginateCursor({ operation: "user.profile.posts", method: "GET", path: "/user/profile/posts" }, Any, { limit: 5 });
      let read = 0;
      for await (const page of pages) {
        read += page.items.length;
        if (read > 10) break;
      }
      expect(asked).toEqual(["", "a", "b"]);
      expect(readWhole(pages)).toBe(false);
      expect(pages.truncation).toMatchObject({ reason: "unreadable_page" });
    } finally {
      server.close();
    }
  });

  it("stops early on break and on an abort signal", async () => {
    const { transport } = setup();
    const req: ApiRequest = { operation: "gallery.all", method: "GET", path: "/gallery/all" };
    for await (const page of transport.paginateOffset(req, Deviation, { limit: 10 })) {
      expect(page.items.length).toBeGreaterThan(0);
      break;
    }
    expect(apiLog()).toHaveLength(1);

    const controller = new AbortController();
    const pages = transport.paginateOffset({ ...req, signal: controller.signal }, Deviation, { limit: 10 });
    let count = 0;
    await expect(
      (async () => {
        for await (const _ of pages) if (++count === 2) controller.abort(new Error("stopped by test"));
      })(),
    ).rejects.toThrow("stopped by test");
    expect(count).toBe(2);
    expect(apiLog()).toHaveLength(3);
  });

  describe("on a folder past the offset ceiling", () => {
    let big: Simulator;
    beforeAll(async () => {
      big = await startSimulator({ seed: 3, dataset: { deviations: 10_100, galleryFolders: 1 } });
    });
    afterAll(async () => {
      await big.close();
    });

    it("stops at offset 10 000 and reports the truncation", async () => {
      const token = big.issueUserToken().access_token;
      const transport = createHttpTransport({
        apiBase: big.url,
        tokens: staticTokenProvider(token, { kind: "user", clientId: "1001", userId: big.truth.ownerId }),
        pacer: createPacer({ store: r.store(`${r.namespace}:${++run}`) }),
        log: createLogger({ level: "silent" }),
      });
      const folder = big.truth.galleryFolders[0]!;
      expect(folder.deviationIds.length).toBeGreaterThan(10_000);
      const pages = transport.paginateOffset(
        { operation: "gallery.folder", method: "GET", path: `/gallery/${folder.folderid}`, query: { mature_content: true } },
        Deviation,
        { limit: 24 },
      );
      let items = 0;
      for await (const page of pages) items += page.items.length;
      expect(pages.truncation).toEqual({ reason: "offset_ceiling", atOffset: 10_008, ceiling: 10_000 });
      const offsets = big.log().map((e) => Number(e.query.offset));
      expect(offsets).toHaveLength(417);
      expect(Math.max(...offsets)).toBe(9984);
      expect(items).toBeGreaterThan(9000);
    });
  });
});

describe("HTTP transport: throttling", () => {
  it.each(["user_throttle", "app_throttle", "cdn_block", "status_503"] as const)(
    "backs off exponentially after %s, visible in the request log, then succeeds",
    async (kind) => {
      const { transport } = setup();
      sim.faults.add({ kind, route: "/placebo", times: 3 });
      await expect(transport.request(placebo, Any)).resolves.toEqual({ status: "success" });
      const entries = apiLog();
      expect(entries.map((e) => e.fault ?? "ok")).toEqual([kind, kind, kind, "ok"]);
      const gaps = deltas(entries);
      // 1, 2 and 4 × BASE_MS: the pacer's block, measured where the service sees it. At least the step's block, and
      // short of the next step's (with 250 ms for a busy machine's scheduling: a CI run at load 4 saw a gap past
      // the step's own block + 250 ms once).
      gaps.forEach((gap, i) => {
        expect(gap).toBeGreaterThanOrEqual(BASE_MS * 2 ** i);
        expect(gap).toBeLessThan(BASE_MS * 2 ** (i + 1) + 250);
      });
      // Three refusals of the service (throttled), and three requests held back by the pacer after them (paced).
      expect(transport.stats.throttled).toBe(3);
      expect(transport.stats.paced.count).toBe(3);
      expect(transport.stats.calls.placebo).toEqual({ [String(entries[0]!.status)]: 3, "200": 1 });
    },
  );

  it("throws ThrottleDelayError when the pacer's wait would exceed maxWaitMs", async () => {
    const { transport } = setup();
    sim.faults.add({ kind: "user_throttle", route: "/placebo", times: 10 });
    const err = await transport.request({ ...placebo, maxWaitMs: 3 * BASE_MS }, Any).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ThrottleDelayError);
    expect(err).toMatchObject({
      kind: "throttled",
      status: 429,
      error: "user_api_threshold",
      operation: "placebo",
      pacerKey: `1001:${sim.truth.ownerId}`,
    });
    // The third block is 4 × BASE_MS from the third 429; a little of it has passed by the time the pacer refuses.
    expect((err as ThrottleDelayError).waitMs).toBeGreaterThan(3 * BASE_MS);
    expect((err as ThrottleDelayError).waitMs).toBeLessThanOrEqual(4 * BASE_MS);
    // 1 × and 2 × BASE_MS were waited for; 4 × was not.
    expect(apiLog()).toHaveLength(3);
  });

  it("gives up after the throttle retry bound with the pacer's remaining wait", async () => {
    const { transport, pacer } = setup({ transport: { retry: { baseDelayMs: 10, throttleRetries: 1 } } });
    sim.faults.add({ kind: "app_throttle", route: "/placebo", times: 10 });
    const err = (await transport.request(placebo, Any).catch((e: unknown) => e)) as ThrottleDelayError;
    expect(err).toBeInstanceOf(ThrottleDelayError);
    expect(err.error).toBe("application_api_threshold");
    expect(apiLog()).toHaveLength(2);
    const status = await pacer.status(err.pacerKey);
    // Two refusals in a row: the second hold is twice the first, and both count as time lost; two may still
    // be lone faults, so the rate is not cut yet.
    expect(status).toMatchObject({ holdMs: 2 * BASE_MS, lostMs: 3 * BASE_MS, refusedRate: null, rate: 1000 });
    expect(err.waitMs).toBeGreaterThan(0);
    expect(err.waitMs).toBeLessThanOrEqual(2 * BASE_MS);
  });
});

describe("HTTP transport: errors and retries", () => {
  it("maps a removed endpoint to EndpointGoneError without retrying", async () => {
    const { transport } = setup();
    const err = await transport
      .request({ operation: "browse.deviantsyouwatch", method: "GET", path: "/browse/deviantsyouwatch" }, Any)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointGoneError);
    expect(err).toMatchObject({ kind: "gone", status: 404, operation: "browse.deviantsyouwatch" });
    expect(apiLog()).toHaveLength(1);
  });

  it("retries a 500 at most 3 times, then fails with kind server", async () => {
    const { transport } = setup();
    sim.faults.add({ kind: "status_500", route: "/placebo", times: 10 });
    const err = await transport.request(placebo, Any).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ kind: "server", status: 500, error: "server_error", attempts: 4 });
    expect(apiLog()).toHaveLength(4);
    expect(transport.stats.retries).toBe(3);
  });

  it("recovers from a 502 and from reset connections on GET", async () => {
    const { transport } = setup();
    sim.faults.add({ kind: "status_502", route: "/placebo", times: 2 });
    await expect(transport.request(placebo, Any)).resolves.toEqual({ status: "success" });
    expect(apiLog()).toHaveLength(3);
    sim.clearLog();
    sim.faults.add({ kind: "reset", route: "/placebo", times: 2 });
    await expect(transport.request(placebo, Any)).resolves.toEqual({ status: "success" });
    expect(apiLog()).toHaveLength(3);
    expect(transport.stats.calls.placebo?.network).toBe(2);
  });

  it("does not retry a POST after a 500 or a reset (it may have happened)", async () => {
    const { transport } = setup();
    const post: ApiRequest = { operation: "placebo.post", method: "POST", path: "/placebo" };
    sim.faults.add({ kind: "status_500", route: "/placebo", times: 1 });
    await expect(transport.request(post, Any)).rejects.toMatchObject({ kind: "server", attempts: 1 });
    sim.faults.add({ kind: "reset", route: "/placebo", times: 1 });
    await expect(transport.request(post, Any)).rejects.toMatchObject({ kind: "network", operation: "placebo.post" });
    expect(apiLog()).toHaveLength(2);
  });

  it("reports malformed JSON and schema mismatches naming the operation", async () => {
    const { transport } = setup();
    sim.faults.add({ kind: "malformed_json", route: "/gallery/all", times: 1 });
    const err = await transport.request({ operation: "gallery.all", method: "GET", path: "/gallery/all" }, Any).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ kind: "malformed", operation: "gallery.all" });
    expect((err as Error).message).toMatch(/^gallery\.all: .*not JSON/);
    expect(apiLog()).toHaveLength(1);

    const mismatch = await transport.request(placebo, z.object({ status: z.literal("ok"), extra: z.number() })).catch((e: unknown) => e);
    expect(mismatch).toMatchObject({ kind: "malformed", operation: "placebo" });
    expect((mismatch as Error).message).toContain("at status");
  });

  it("refreshes once after a 401 in the middle of paging and carries on", async () => {
    let current = sim.issueUserToken().access_token;
    const failed: string[] = [];
    const tokens: TokenProvider = {
      identity,
      getAccessToken: async () => current,
      refreshAfterUnauthorized: async (token) => {
        failed.push(token);
        current = sim.issueUserToken().access_token;
        return current;
      },
    };
    const first = current;
    const { transport } = setup({ tokens });
    let pages = 0;
    for await (const _ of transport.paginateOffset({ operation: "gallery.all", method: "GET", path: "/gallery/all" }, Deviation, { limit: 24 })) {
      if (++pages === 2) sim.expireAccessTokens();
    }
    expect(failed).toEqual([first]);
    expect(transport.stats.refreshes).toBe(1);
    const statuses = apiLog().map((e) => e.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(1);
    expect(statuses.at(-1)).toBe(200);
    expect(statuses.indexOf(401)).toBe(2);
  });

  it("treats a second 401 as fatal; a refresh that fails on a fault, not a verdict, is deferred, never 'log in again'", async () => {
    const stale = sim.issueUserToken().access_token;
    sim.expireAccessTokens();
    let refreshes = 0;
    const { transport } = setup({
      tokens: {
        identity,
        getAccessToken: async () => stale,
        refreshAfterUnauthorized: async () => {
          refreshes++;
          return stale;
        },
      },
    });
    const err = await transport.request(placebo, Any).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: "invalid_token", status: 401, attempts: 2 });
    expect((err as Error).message).toContain("dvault auth login");
    expect(refreshes).toBe(1);
    expect(apiLog()).toHaveLength(2);

    const { transport: t2 } = setup({
      tokens: {
        identity,
        getAccessToken: async () => stale,
        refreshAfterUnauthorized: async () => {
          // Redis gone under the refresh's lock: the token layer's own verdicts are UserErrors, this is a fault.
          throw new Error("Connection is closed.");
        },
      },
    });
    const err2 = await t2.request(placebo, Any).catch((e: unknown) => e);
    expect(err2).toBeInstanceOf(TokenRefreshDeferredError);
    expect((err2 as Error).message).toContain("placebo: Connection is closed.");
    expect((err2 as Error).message).not.toContain("dvault auth login");
    expect(isPermanent(err2)).toBe(false);
  });

  it("sends the token only in the Authorization header and never logs it", async () => {
    const { transport, token, lines } = setup();
    await transport.request({ ...placebo, query: { flag: true, ids: ["a", "b"] } }, Any);
    await transport.request(
      {
        operation: "user.whois",
        method: "POST",
        path: "/user/whois",
        form: { usernames: [sim.truth.users.get(sim.truth.ownerId)!.username], expand: undefined },
      },
      z.looseObject({ results: z.array(Any) }),
    );
    sim.faults.add({ kind: "status_500", route: "/placebo", times: 1 });
    await transport.request(placebo, Any);
    const entries = apiLog();
    expect(entries).toHaveLength(4);
    for (const e of entries) {
      expect(e.auth).toBe("bearer");
      expect(e.query.access_token).toBeUndefined();
      expect(e.form.access_token).toBeUndefined();
      expect(JSON.stringify([e.path, e.query, e.form])).not.toContain(token);
    }
    expect(entries[0]!.query).toEqual({ flag: "true", "ids[]": ["a", "b"] });
    expect(entries[1]!.form).toEqual({ "usernames[]": sim.truth.users.get(sim.truth.ownerId)!.username });
    const logged = lines.join("");
    expect(logged).toContain('"operation":"user.whois"');
    expect(logged).not.toContain(token);
  });
});

describe("HTTP transport: abort", () => {
  it("releases the key's permit when a call is aborted mid-flight, so the next call is not stalled", async () => {
    const { transport, pacer } = setup({ pacer: { lockTtlMs: 60_000 } });
    sim.faults.add({ kind: "latency", latencyMs: 2_000, times: 1 });
    const abort = new AbortController();
    const pending = transport.request({ ...placebo, signal: abort.signal }, Any);
    await expect.poll(() => apiLog().length, { timeout: 2_000, interval: 10 }).toBe(1);
    abort.abort();
    await expect(pending).rejects.toThrow();
    const key = `1001:${sim.truth.ownerId}`;
    await expect.poll(async () => (await pacer.status(key)).holders, { timeout: 1_000, interval: 10 }).toBe(0);
    // Without the release this waits for the 60 s lock TTL and fails with ThrottleDelayError.
    await expect(transport.request({ ...placebo, maxWaitMs: 1_000 }, Any)).resolves.toMatchObject({ status: "success" });
  });
});
