// A process killed outright (SIGKILL, a power loss, the OOM killer) after a batch of originals was placed in the
// archive and before the batch's rows committed leaves no note of its own (src/downloads/placed-originals.ts keeps one
// only when a commit fails); before the batch's journal (src/downloads/placed-journal.ts), an attempt that came after
// the paid answer's 5 minutes (src/downloads/paid-downloads.ts) called /deviation/download again for bytes already
// placed: one more original of the week's allowance per file. Now the next run, however much later, records each row
// from the placed file the journal lists, with no call and no transfer. With a bucket too: the journal stays in the
// host's own .partial folder, the files' sha256 read back from the bucket.
import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { downloadLockKey } from "../../src/downloads/download-file.ts";
import { paidDownloadsPrefix } from "../../src/downloads/paid-downloads.ts";
import { isPlacedJournal } from "../../src/downloads/placed-journal.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { collectRun, runDvault } from "../helpers/dvault-cli.ts";
import {
  createDownloadHarness,
  type DownloadHarness,
  downloadableOriginals,
  downloadTraffic,
  originalsUsed,
  parkOriginalsOf,
  wantAgain,
} from "../helpers/download-harness.ts";
import { startS3Server, type S3TestServer } from "../helpers/s3-server.ts";

let h: DownloadHarness;
let ids: string[];

async function originalRows(): Promise<{ deviationid: string; status: string; path: string | null; sha256: string | null }[]> {
  const { rows } = await h.pool.query<{ deviationid: string; status: string; path: string | null; sha256: string | null }>(
    "SELECT deviationid, status::text, path, sha256 FROM downloads WHERE kind = 'original' AND deviationid = ANY($1) ORDER BY deviationid",
    [ids],
  );
  return rows;
}

/** `download --once` of every wanted original in a child that SIGKILLs itself before its second batch's rows commit; that batch's paths. */
async function runKilledBeforeCommit(killAt: KillAt): Promise<string[]> {
  const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/medium/placed-kill-child.ts")], {
    env: { ...process.env, DL_ENV: JSON.stringify(h.env), DL_FILES: String(ids.length), DL_KILL_AT: killAt },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const signal = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, sig) => resolve(sig)));
  const run = await collectRun(child, Date.now());
  expect(await signal, run.stderr).toBe("SIGKILL");
  return JSON.parse(run.stdout.trim().split("\n").at(-1) ?? "[]") as string[];
}

/** Where the child dies: just before the batch's rows commit, or as soon as its files are placed (placed-kill-child.ts). */
type KillAt = "commit" | "placed";
const KILLED: Record<KillAt, string> = { commit: "before its rows committed", placed: "as soon as they were placed" };

for (const [storage, killAt] of [
  ["local", "commit"],
  ["s3", "commit"],
  ["local", "placed"],
] as const) {
  let s3: S3TestServer | undefined;

  describe(`a batch of originals placed (${storage === "s3" ? "in a bucket" : "in the archive folder"}) by a process killed ${KILLED[killAt]}`, () => {
    beforeAll(async () => {
      s3 = storage === "s3" ? await startS3Server() : undefined;
      h = await createDownloadHarness({
        sim: { dataset: { deviations: 8, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 100 },
        sources: [gallerySource],
        quota: 10,
        ...(s3 ? { env: s3.env } : {}),
      });
      await h.syncAll(["gallery"]);
      ids = (await downloadableOriginals(h.pool, 4)).sort();
      await parkOriginalsOf(h.pool, ids);
    }, 120_000);

    afterAll(async () => {
      await h?.close();
      await s3?.close();
    });

    it("is recorded by a run long after the paid answers expired, with no second /deviation/download", async () => {
      const used = await originalsUsed(h.pool);
      let seq = Number.POSITIVE_INFINITY;
      for (const id of ids) seq = Math.min(seq, await wantAgain(h, id));
      const killedBatch = await runKilledBeforeCommit(killAt);
      // The first file's batch committed; the three others, placed together, died before their commit.
      expect(killedBatch).toHaveLength(ids.length - 1);
      const truth = new Map(await Promise.all(ids.map(async (id) => [id, await h.sim.fileSha256(id)] as const)));
      const beforeKill = await originalRows();
      const killed = beforeKill.filter((r) => r.status !== "done").map((r) => r.deviationid);
      // The killed batch's rows: none written, each file at the address of its sha256, listed in a journal and in no note.
      expect(killed).toHaveLength(killedBatch.length);
      expect(new Set(killedBatch.map((p) => path.basename(p).split(".")[0]))).toEqual(new Set(killed.map((id) => truth.get(id))));
      const partials = await fs.readdir(path.join(h.archiveDir, ".partial"));
      expect(partials.filter((n) => n.endsWith(".placed.json"))).toEqual([]);
      expect(partials.filter(isPlacedJournal)).toHaveLength(1);

      // An hour later: the signed URLs expired on the simulator's clock, the paid answers gone as their 5 minutes end (the
      // store's TTL, which no test clock moves, done by hand), and the dead process's locks with them.
      h.sim.clock.advance(60 * 60_000);
      for (const id of ids) {
        await h.services.coord.remove(`${paidDownloadsPrefix(h.services.config.redisPrefix)}${id}`);
        await h.services.coord.remove(downloadLockKey(h.services.config.redisPrefix, id, "original"));
      }
      for (const id of killed) await wantAgain(h, id);
      const again = await runDvault(h, ["download", "--once"]);
      expect(again.code, again.stdout + again.stderr).toBe(0);

      expect(await originalRows()).toEqual(
        ids.map((id) => ({
          deviationid: id,
          status: "done",
          path: killed.includes(id) ? (killedBatch.find((p) => path.basename(p).startsWith(`${truth.get(id)}.`)) ?? "?") : expect.any(String),
          sha256: truth.get(id),
        })),
      );
      // One /deviation/download and one CDN fetch per file in all, by the killed run; one original of the allowance each.
      expect(ids.map((id) => downloadTraffic(h, id, seq))).toEqual(ids.map(() => ["api 200", "cdn 200"]));
      expect(await originalsUsed(h.pool)).toBe(used + ids.length);
      // The journal goes once its rows are written.
      expect((await fs.readdir(path.join(h.archiveDir, ".partial"))).filter(isPlacedJournal)).toEqual([]);
    }, 90_000);
  });
}
