// The install's secret key lost in a move (a new machine, a config folder not carried over): the stored tokens cannot be
// read. Every run says so in one line with the exit code of an account that must log in again (4), claims none of the
// account's files (none is marked failed for a fault of this machine's), and `dvault status` shows the account as
// needing a login, not "ok". The real CLI in child processes (src/api/token-manager.ts unusableAccount, keyedStatus).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, it } from "vitest";
import { createDownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { TEST_ENGINE } from "../helpers/env.ts";

const KEY_LINE =
  'dvault: account "SimArtist" must be authorized again: its stored tokens were encrypted with another key than DVAULT_SECRET_KEY (restore that key, or log in again). ' +
  "Run: dvault auth login --account SimArtist — or, on a headless server: dvault auth import --refresh-token <token> --account SimArtist";

/** An account of 6 works, logged in with the harness's key (DVAULT_SECRET_KEY in its env). */
const account = () =>
  createDownloadHarness({
    sim: {
      seed: 32,
      dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0, messages: 0, notes: 0, feedItems: 0 },
      downloadQuota: 500,
      startTime: new Date(),
    },
    quota: 500,
  });

/** The harness's settings without its key, the key file looked for in a config folder of the test's own. */
function withoutKey(env: Record<string, string>, configDir: string): Record<string, string> {
  const { DVAULT_SECRET_KEY: _key, ...rest } = env;
  return { ...rest, DVAULT_CONFIG_DIR: configDir };
}

it("says in one line that the key is not the tokens' own, exits 4, and leaves every file as it was", async () => {
  const h = await account();
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
    // Its files wait for that login, not "due now" for a run that would refuse them.
    expect(status.stdout).toContain(`  ${before.length} wait for an account to log in again, not tried until then: dvault auth login --account SimArtist`);
    expect(status.stdout).toMatch(/^ {2}done for now: nothing is due$/m);
  } finally {
    await h.close();
  }
}, 120_000);

it("with no key anywhere, status says none was found and makes none, with the app's credentials set", async () => {
  const h = await account();
  const configDir = mkdtempSync(path.join(os.tmpdir(), "dvault-no-key-"));
  try {
    const status = await runDvault({ redis: h.redis, env: withoutKey(h.env, configDir) }, ["status"]);
    expect(status.stdout).toContain(
      `its stored tokens cannot be read, since no key was found in DVAULT_SECRET_KEY or the key file ${path.join(configDir, "secret.key")} (restore that key, or log in again)`,
    );
    expect(existsSync(path.join(configDir, "secret.key"))).toBe(false);
  } finally {
    rmSync(configDir, { recursive: true, force: true });
    await h.close();
  }
}, 120_000);

it("a key file that holds no key stops a run as a lost key does: exit 4, one line, no file marked failed", async () => {
  const h = await account();
  const configDir = mkdtempSync(path.join(os.tmpdir(), "dvault-bad-key-"));
  try {
    const synced = await runDvault({ redis: h.redis, env: h.env }, ["sync", "--once", "--only", "gallery"]);
    expect(synced.code, synced.stderr).toBe(0);
    const keyFile = path.join(configDir, "secret.key");
    writeFileSync(keyFile, "not a key\n", { mode: 0o600 });
    const run = await runDvault({ redis: h.redis, env: { ...withoutKey(h.env, configDir), DVAULT_RUN_ITEM_PATIENCE: "0s" } }, ["download", "--once"]);
    expect(run.code, run.stdout).toBe(4);
    expect(run.stderr.trim().split("\n")).toEqual([
      `dvault: account "SimArtist" must be authorized again: its stored tokens cannot be read: the key file ${keyFile} does not hold a 32-byte key (64 hex digits). Restore it from your backup. ` +
        "Run: dvault auth login --account SimArtist — or, on a headless server: dvault auth import --refresh-token <token> --account SimArtist",
    ]);
    expect((await h.pool.query("SELECT count(*)::int AS n FROM downloads WHERE status = 'failed'")).rows[0]?.n).toBe(0);
  } finally {
    rmSync(configDir, { recursive: true, force: true });
    await h.close();
  }
}, 120_000);

it("the alerts and the digest tell of it, as of an account that must log in again", async () => {
  const h = await account();
  const out = mkdtempSync(path.join(os.tmpdir(), "dvault-lost-key-digest-"));
  try {
    const wrongKey = { ...h.env, DVAULT_SECRET_KEY: randomBytes(32).toString("hex") };
    const alerts = await runDvault({ redis: h.redis, env: wrongKey }, ["digest", "--alerts", "--json"]);
    expect(alerts.code, alerts.stderr).toBe(0);
    expect(JSON.parse(alerts.stdout)).toMatchObject({ open: 1, notified: ["account “SimArtist” needs re-authorization"] });
    const preview = await runDvault({ redis: h.redis, env: wrongKey }, ["digest", "--preview", "--out", out]);
    expect(preview.code, preview.stderr).toBe(0);
    const text = readFileSync(path.join(out, "digest.txt"), "utf8");
    expect(text).toContain("its stored tokens were encrypted with another key than DVAULT_SECRET_KEY (restore that key, or log in again)");
    expect(text).toContain("dvault auth login --account SimArtist");
  } finally {
    rmSync(out, { recursive: true, force: true });
    await h.close();
  }
}, 120_000);

it("with the key file lost, sync and archive --once make no new key file: exit 4, naming where the key was looked for", async () => {
  const h = await account();
  const configDir = mkdtempSync(path.join(os.tmpdir(), "dvault-lost-key-file-"));
  try {
    for (const args of [
      ["sync", "--once", "--only", "gallery"],
      ["archive", "--once", "--only", "gallery"],
    ]) {
      const run = await runDvault({ redis: h.redis, env: withoutKey(h.env, configDir) }, args);
      expect(run.code, run.stdout + run.stderr).toBe(4);
      expect(run.stderr).toContain(`no key was found in DVAULT_SECRET_KEY or the key file ${path.join(configDir, "secret.key")}`);
      expect(existsSync(path.join(configDir, "secret.key")), args.join(" ")).toBe(false);
    }
  } finally {
    rmSync(configDir, { recursive: true, force: true });
    await h.close();
  }
}, 120_000);

it("auth status with the key file lost makes none either: the account needs a login, naming where the key was looked for", async () => {
  const h = await account();
  const configDir = mkdtempSync(path.join(os.tmpdir(), "dvault-lost-key-auth-"));
  try {
    const run = await runDvault({ redis: h.redis, env: withoutKey(h.env, configDir) }, ["auth", "status", "--json", "--no-check"]);
    expect(run.code, run.stderr).toBe(4);
    const [account] = JSON.parse(run.stdout) as Array<{ state: string; stateReason: string }>;
    expect(account).toMatchObject({
      state: "needs_reauth",
      stateReason: `its stored tokens cannot be read, since no key was found in DVAULT_SECRET_KEY or the key file ${path.join(configDir, "secret.key")} (restore that key, or log in again)`,
    });
    expect(existsSync(path.join(configDir, "secret.key"))).toBe(false);
  } finally {
    rmSync(configDir, { recursive: true, force: true });
    await h.close();
  }
}, 120_000);

// The worker started where its key file was lost, with download jobs already queued for the account (src/services.ts
// apiFor, jobs/refresh-tokens): no new key file, and the queued files go back to wanted without an attempt spent.
it("a worker whose key file was lost makes no new key file and tries none of the queued files", async () => {
  const h = await account();
  const configDir = mkdtempSync(path.join(os.tmpdir(), "dvault-lost-key-worker-"));
  try {
    // The sync queues the account's files for a worker (their rows queued).
    const synced = await runDvault({ redis: h.redis, env: h.env }, ["sync", "--once", "--only", "gallery"]);
    expect(synced.code, synced.stderr).toBe(0);
    const queued = async () => (await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE queued_at IS NOT NULL")).rows[0]?.n;
    expect(await queued()).toBeGreaterThan(0);
    const worker = spawn(process.execPath, [path.resolve("bin/dvault.js"), "worker"], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: "/nonexistent-home",
        LOG_LEVEL: "warn",
        REDIS_URL: h.redis.url,
        DVAULT_ENGINE: TEST_ENGINE,
        ...withoutKey(h.env, configDir),
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    worker.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    try {
      // Every queued file handed back, the worker having started its jobs (the token refresh among them).
      await expect.poll(queued, { timeout: 60_000, interval: 100 }).toBe(0);
    } finally {
      const closed = once(worker, "close");
      worker.kill("SIGTERM");
      await closed;
    }
    const rows = (await h.pool.query<{ status: string; attempts: number }>("SELECT status::text, attempts FROM downloads")).rows;
    expect(
      rows.filter((r) => r.status === "failed" || r.attempts > 0),
      stderr,
    ).toEqual([]);
    expect(existsSync(path.join(configDir, "secret.key")), stderr).toBe(false);
  } finally {
    rmSync(configDir, { recursive: true, force: true });
    await h.close();
  }
}, 120_000);
