// The /deviation/download answer an attempt paid for is kept until the file is stored (src/downloads/paid-downloads.ts),
// so that the attempt after a failure spends no second original of the week's allowance. On DVAULT_ENGINE=postgres that
// answer lives in the mirror's own database: when PostgreSQL goes away (a restart, a failover, the disk full) right
// after the service answered, the answer cannot be written, the job meets the outage and runs again in seconds — and
// before the fix that next attempt found no paid answer and called /deviation/download a second time: one file,
// two of the week's originals spent, upstream and in the ledger. The same holds for Redis going away on that engine.
// An original paid for and placed in the archive whose row the database refused (read-only, its disk full) for longer
// than the paid answer is kept (5 minutes): before the fix, the run after the refusal found no paid answer and called
// /deviation/download again for bytes already placed. Now the placed file is kept (src/downloads/placed-originals.ts)
// until its row is written, and a later run, in a new process, writes the row from it with no call and no transfer.
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Coordinator } from "../../src/coord/coordinator.ts";
import { setDownloadTuning } from "../../src/downloads/deps.ts";
import { paidDownloadsPrefix } from "../../src/downloads/paid-downloads.ts";
import { placedOriginalsPrefix } from "../../src/downloads/placed-originals.ts";
import { runDownloadsOnce } from "../../src/downloads/run-once.ts";
import type { Services } from "../../src/services.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import {
  createDownloadHarness,
  type DownloadHarness,
  downloadableOriginals,
  downloadTraffic,
  originalsUsed,
  parkOriginalsOf,
  wantAgain,
} from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { TEST_ENGINE } from "../helpers/env.ts";

let h: DownloadHarness;
/** Three works with an original, each case's own: parked until it wants one. */
let ids: string[];

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 100 },
    sources: [gallerySource],
    quota: 10,
  });
  await h.syncAll(["gallery"]);
  ids = await downloadableOriginals(h.pool, 3);
  await parkOriginalsOf(h.pool, ids);
  // A stored row refused as a read-only server refuses it: everything before it (the claim, the attempt, the
  // allowance's ledger, the paid answer) is written.
  await h.pool.query(
    `CREATE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'cannot execute UPDATE in a read-only transaction' USING ERRCODE = 'read_only_sql_transaction'; END $$`,
  );
}, 120_000);

afterAll(async () => {
  await h?.close();
});

afterEach(async () => {
  await h.pool.query("DROP TRIGGER IF EXISTS refuse_write ON downloads");
});

/** A store whose next write of a paid answer fails as a PostgreSQL shutting down does (57P01: an outage, not the job's fault). */
function failingPaidWrites(coord: Coordinator, times: number): Coordinator & { failed: number } {
  const wrapped = Object.create(coord) as Coordinator & { failed: number };
  wrapped.failed = 0;
  wrapped.put = async (key, value, options) => {
    if (key.includes(":downloads:paid:") && wrapped.failed < times) {
      wrapped.failed++;
      throw Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01", severity: "FATAL" });
    }
    return coord.put(key, value, options);
  };
  return wrapped;
}

describe("a paid download answer the store could not keep", () => {
  it("is not paid for twice when the store goes away right after the service answered", async () => {
    const id = ids[2] ?? "";
    const usedBefore = await originalsUsed(h.pool);
    const seq = await wantAgain(h, id);
    const coord = failingPaidWrites(h.services.coord, 1);
    const services: Services = { ...h.services, coord };
    const deps = setDownloadTuning(services, { lockTtlMs: 3000 });
    const summary = await runDownloadsOnce({
      services,
      deps,
      log: h.log,
      progressEveryMs: 60_000,
      patience: { itemMs: 5000, runMs: 10_000, baseMs: 20, capMs: 200 },
    });
    expect(coord.failed).toBe(1);
    expect(summary.failures).toEqual([]);
    const { rows: after } = await h.pool.query<{ status: string; sha256: string | null }>(
      "SELECT status, sha256 FROM downloads WHERE kind = 'original' AND deviationid = $1",
      [id],
    );
    expect(after[0]?.status).toBe("done");
    expect(after[0]?.sha256).toBe(await h.sim.fileSha256(id));
    // One /deviation/download for one file: the attempt after the outage used the answer it had paid for.
    expect(downloadTraffic(h, id, seq).filter((t) => t.startsWith("api"))).toEqual(["api 200"]);
    expect(await originalsUsed(h.pool)).toBe(usedBefore + 1);
  }, 60_000);
});

/**
 * One run of `id` whose stored row is refused (download --once ends with exit 3), then an hour with writes refused:
 * the paid answer gone as its 5 minutes end (the store's TTL, which no test clock moves, done by hand) and its signed
 * URL expired on the simulator's clock. Returns the file placed and the simulator's log position before the run.
 */
async function placedThenRefusedAnHour(id: string): Promise<{ seq: number; placed: string; used: number }> {
  const used = await originalsUsed(h.pool);
  const seq = await wantAgain(h, id);
  await h.pool.query(`CREATE TRIGGER refuse_write BEFORE UPDATE ON downloads FOR EACH ROW WHEN (NEW.status = 'done') EXECUTE FUNCTION refuse_write()`);
  await expect(h.runOnce()).rejects.toMatchObject({ exitCode: 3 });
  const sha256 = await h.sim.fileSha256(id);
  const dir = path.join(h.archiveDir, "originals", sha256.slice(0, 2), sha256.slice(2, 4));
  const placed = (await fs.readdir(dir)).filter((name) => name.startsWith(`${sha256}.`));
  expect(placed).toHaveLength(1);
  const { rows } = await h.pool.query<{ status: string }>("SELECT status::text FROM downloads WHERE kind = 'original' AND deviationid = $1", [id]);
  expect(rows[0]?.status).not.toBe("done");
  h.sim.clock.advance(60 * 60_000);
  await h.services.coord.remove(`${paidDownloadsPrefix(h.services.config.redisPrefix)}${id}`);
  await h.pool.query("DROP TRIGGER refuse_write ON downloads");
  return { seq, placed: path.relative(h.archiveDir, path.join(dir, placed[0] ?? "")), used };
}

/** The next day's `dvault download --once`, a new process: it records the row from the placed file, paying nothing. */
async function expectRecordedWithoutPaying(id: string, from: { seq: number; placed: string; used: number }): Promise<void> {
  await wantAgain(h, id);
  const run = await runDvault(h, ["download", "--once"]);
  expect(run.code, run.stdout + run.stderr).toBe(0);
  const { rows } = await h.pool.query<{ status: string; path: string; sha256: string }>(
    "SELECT status::text, path, sha256 FROM downloads WHERE kind = 'original' AND deviationid = $1",
    [id],
  );
  expect(rows[0]).toEqual({ status: "done", path: from.placed, sha256: await h.sim.fileSha256(id) });
  // One /deviation/download and one CDN fetch for the file, both by the refused run.
  expect(downloadTraffic(h, id, from.seq)).toEqual(["api 200", "cdn 200"]);
  expect(await originalsUsed(h.pool)).toBe(from.used + 1);
  // Nothing kept once the row is written.
  expect(await h.services.coord.get(`${placedOriginalsPrefix(h.services.config.redisPrefix)}${id}`)).toBeUndefined();
  expect((await fs.readdir(path.join(h.archiveDir, ".partial"))).filter((n) => n.startsWith(id))).toEqual([]);
}

describe("an original placed whose row the database refused for an hour", () => {
  it("is recorded from the archive's own disk by the next run, with no second /deviation/download", async () => {
    const id = ids[0] ?? "";
    const from = await placedThenRefusedAnHour(id);
    // As on DVAULT_ENGINE=postgres, where the coordination store is the database that refused: nothing kept there.
    await h.services.coord.remove(`${placedOriginalsPrefix(h.services.config.redisPrefix)}${id}`);
    await expectRecordedWithoutPaying(id, from);
  }, 60_000);

  // Another downloads host, with no disk shared with the one that placed the file (DVAULT_ENGINE=redis: the store is not the database).
  it.runIf(TEST_ENGINE === "redis")(
    "is recorded from the coordination store by a host without the placing host's disk",
    async () => {
      const id = ids[1] ?? "";
      const from = await placedThenRefusedAnHour(id);
      for (const name of await fs.readdir(path.join(h.archiveDir, ".partial"))) {
        if (name.startsWith(`${id}-original`)) await fs.rm(path.join(h.archiveDir, ".partial", name));
      }
      await expectRecordedWithoutPaying(id, from);
    },
    60_000,
  );
});
