// A first sync of a new database, as a newcomer runs it (issue #17): its log says nothing of a resumed sweep,
// since nothing was interrupted.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";

let h: DownloadHarness;

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 30, galleryFolders: 3, collectionFolders: 2, favourites: 4, trackedUsers: 1 }, startTime: new Date() },
  });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe("a first sync", () => {
  it("logs no resumed sweep on a new database", async () => {
    // -v: a command logs at warn unless asked for more, in a pipe too (issue #26).
    const run = await runDvault({ ...h, env: { ...h.env, LOG_LEVEL: "info" } }, ["-v", "sync", "--once"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain("source synced");
    expect(run.stderr).not.toContain("sweep resumed");
  }, 120_000);
});
