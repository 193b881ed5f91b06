// The install's secret key lost in a move (a new machine, a config folder not carried over): the stored tokens cannot be
// read. Every run says so in one line with the exit code of an account that must log in again (4), claims none of the
// account's files (none is marked failed for a fault of this machine's), and `dvault status` shows the account as
// needing a login, not "ok". The real CLI in child processes (src/api/token-manager.ts unusableAccount, keyedStatus).
import { randomBytes } from "node:crypto";
import { expect, it } from "vitest";
import { createDownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";

const KEY_LINE =
  'dvault: account "SimArtist" must be authorized again: its stored tokens were encrypted with another key than DVAULT_SECRET_KEY (restore that key, or log in again). ' +
  "Run: dvault auth login --account SimArtist — or, on a headless server: dvault auth import --refresh-token <token> --account SimArtist";

it("says in one line that the key is not the tokens' own, exits 4, and leaves every file as it was", async () => {
  const h = await createDownloadHarness({
    sim: {
      seed: 32,
      dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0, messages: 0, notes: 0, feedItems: 0 },
      downloadQuota: 500,
      startTime: new Date(),
    },
    quota: 500,
  });
  try {
    const synced = await runDvault({ redis: h.redis, env: h.env }, ["sync", "--once", "--only", "gallery"]);
    expect(synced.code, synced.stderr).toBe(0);
    const files = async () => (await h.pool.query<{ line: string }>("SELECT deviationid || ' ' || status::text AS line FROM downloads ORDER BY 1")).rows;
    const before = await files();
    expect(before.length).toBeGreaterThan(0);

    const wrongKey = { ...h.env, DVAULT_RUN_ITEM_PATIENCE: "0s", DVAULT_SECRET_KEY: randomBytes(32).toString("hex") };
    const download = await runDvault({ redis: h.redis, env: wrongKey }, ["download", "--once"]);
    expect(download.code, download.stdout).toBe(4);
    expect(download.stderr.trim().split("\n")).toEqual([KEY_LINE]);

    const archive = await runDvault({ redis: h.redis, env: wrongKey }, ["archive", "--once", "--only", "gallery"]);
    expect(archive.code, archive.stdout).toBe(4);
    expect(archive.stderr.trim()).toContain("must be authorized again: its stored tokens were encrypted with another key than DVAULT_SECRET_KEY");
    expect(await files()).toEqual(before);
    // The sync's listing reached the service (the log names its routes so), no paid download did.
    expect(h.sim.log().some((e) => e.route.includes("/gallery/"))).toBe(true);
    expect(h.sim.log().filter((e) => e.route.includes("/deviation/download/"))).toEqual([]);

    const status = await runDvault({ redis: h.redis, env: wrongKey }, ["status"]);
    expect(status.stdout).toMatch(/^ {2}SimArtist \[user\] NEEDS_REAUTH: /m);
    expect(status.stdout).toContain("its stored tokens were encrypted with another key than DVAULT_SECRET_KEY (restore that key, or log in again)");
    expect(status.stdout).toContain("fix: dvault auth login --account SimArtist");
  } finally {
    await h.close();
  }
}, 120_000);
