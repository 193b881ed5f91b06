// The static source through the real runner: countries and the three policy texts mirrored, a text
// archived once per distinct version, and a quiet re-run costs two calls.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunSourceResult } from "../../src/sync/run-source.ts";
import { staticSource } from "../../src/sync/sources/static.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;
/** The first sync, made here so either test can run first: the second only re-runs it, which stores nothing new. */
let first: RunSourceResult;

beforeAll(async () => {
  h = await createSyncHarness({ sources: [staticSource] });
  first = await runLater();
});
afterAll(async () => {
  await h?.close();
});

async function runLater(opts: { full?: boolean } = {}) {
  h.sim.clock.advance(60_000);
  return h.runSource("static", opts);
}

/** What the simulator serves (it has no ground-truth object for static data): read with a client token. */
async function served(path: string): Promise<unknown> {
  const token = h.sim.issueClientToken().access_token;
  const res = await fetch(`${h.sim.apiUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return res.json();
}

describe("static source", () => {
  it("mirrors the country list and every policy text on the first sync", async () => {
    const result = first;
    expect(result.status).toBe("ok");
    const { results } = (await served("/data/countries")) as { results: Array<{ countryid: number; name: string }> };
    const { rows: countries } = await h.pool.query("SELECT countryid, name FROM countries ORDER BY countryid");
    expect(countries).toEqual(results);
    const { rows: texts } = await h.pool.query<{ kind: string; text: string }>("SELECT kind, text FROM policy_texts ORDER BY kind");
    const expected = [];
    for (const kind of ["privacy", "submission", "tos"]) expected.push({ kind, text: ((await served(`/data/${kind}`)) as { text: string }).text });
    expect(texts).toEqual(expected);
    expect(result.counters).toEqual({ new: results.length + 3, changed: 0, removed: 0 });
  });

  it("costs at most 2 API calls when nothing changed, and checks every endpoint within two runs", async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2; i++) {
      const seq = h.lastSeq();
      const result = await runLater();
      const log = h.sim.log().filter((e) => e.seq > seq && e.route.startsWith("/api/v1/oauth2"));
      expect(result.full).toBe(false);
      expect(log.length).toBeLessThanOrEqual(2);
      expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });
      for (const e of log) seen.add(e.route.replace("/api/v1/oauth2", ""));
    }
    expect([...seen].sort()).toEqual(["/data/countries", "/data/privacy", "/data/submission", "/data/tos"]);
    // Unchanged texts are not stored again.
    const { rows } = await h.pool.query("SELECT count(*)::int AS n FROM policy_texts");
    expect(rows[0]).toEqual({ n: 3 });
  });
});
