// What a newcomer meets before anything works (issue #17): a database never migrated is named as such by status,
// sync and download (not "log in"), with exit code 3 (issue #26); sync and download without --once say when no
// worker takes what they queue.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { TEST_PG_ADDRESS, TEST_PG_URL } from "../helpers/env.ts";

let h: DownloadHarness;
const empty = `dvault_t_empty_${randomBytes(4).toString("hex")}`;

beforeAll(async () => {
  h = await createDownloadHarness({ sim: { dataset: { deviations: 4, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 } } });
  const admin = await connectPg(TEST_PG_URL);
  await admin.query(`CREATE DATABASE ${quoteIdent(empty)}`).finally(() => admin.end());
}, 120_000);

afterAll(async () => {
  await h?.close();
  const admin = await connectPg(TEST_PG_URL);
  await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(empty)} WITH (FORCE)`).finally(() => admin.end());
});

describe("a newcomer's first commands", () => {
  it("on a database never migrated, status, sync and download say to run dvault migrate", async () => {
    const env = { ...h.env, DATABASE_URL: withDatabase(TEST_PG_URL, empty) };
    for (const args of [["status"], ["sync"], ["download"]]) {
      const run = await runDvault({ ...h, env }, args);
      expect(run.code).toBe(3);
      expect(run.stdout).toBe("");
      expect(run.stderr).toBe(`dvault: the database "${empty}" on ${TEST_PG_ADDRESS} has no dvault schema yet: run dvault migrate\n`);
    }
  }, 60_000);

  it("sync and download without --once say that no worker is running, and status shows the queues waiting for one", async () => {
    const sync = await runDvault(h, ["sync", "--only", "gallery"]);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout).toContain("queued 1 source run(s) for the worker");
    expect(sync.stderr).toBe("dvault: no worker is running: the queued work waits until one starts (dvault worker), or run the command with --once\n");
    const download = await runDvault(h, ["download", "--json"]);
    expect(download.code, download.stderr).toBe(0);
    expect(JSON.parse(download.stdout)).toMatchObject({ workerRunning: false });
    expect(download.stderr).toContain("no worker is running");
    const status = await runDvault(h, ["status"]);
    expect(status.stdout).toMatch(/^ {2}sync\s+1\s.*no worker$/m);
  }, 60_000);
});
