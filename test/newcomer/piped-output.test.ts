// `dvault download --once 2>&1 | cat`, as cron runs it (issue #26): piped, at the default verbosity, a run prints
// its summary on stdout and nothing else; a warning is one plain line, and -v brings the info lines back as plain
// lines too (never pino's JSON: that is the worker's), -q prints only problems. A quota deferral, a pacing wait and a throttle are three words and three counts: a deferral is never
// logged as a throttle, and sync's "throttled" column counts only the service's refusals, not dvault's own pacing.
// The real CLI in child processes with piped stdio: not a terminal.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";

let h: DownloadHarness;

/** As a person's shell has it: LOG_LEVEL unset is `info` (the default, and what .env.example sets). */
const dvault = (args: string[], env: Record<string, string> = {}) => runDvault({ ...h, env: { ...h.env, LOG_LEVEL: "info", ...env } }, args);

/** Lines that are pino's JSON (a log line), whatever the stream. */
const jsonLines = (text: string) => text.split("\n").filter((l) => l.startsWith("{"));

/** A plain log line's message and its key=value fields (src/cli/output/log-lines.ts), values as printed. */
function plainLine(line: string): { msg: string; fields: Record<string, string> } {
  const m = /^dvault: (.*?)(?: \((\w+=.*)\))?$/.exec(line);
  const fields = Object.fromEntries([...(m?.[2] ?? "").matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|\S+)/g)].map((f) => [f[1], f[2]?.replace(/^"|"$/g, "")]));
  return { msg: m?.[1] ?? line, fields };
}

/** The originals not stored in full wanted again, due now: the next run has them to do. */
async function wantOriginalsAgain(): Promise<void> {
  await h.pool.query("UPDATE downloads SET status = 'wanted', next_attempt_at = NULL WHERE kind = 'original' AND status <> 'done'");
}

beforeAll(async () => {
  // The commands use the wall clock: the simulator's week is this week.
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 100, startTime: new Date() },
    sources: [gallerySource],
    quota: 1,
  });
  await h.syncAll(["gallery"]);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe("output piped, as cron runs it", () => {
  it("at the default verbosity, a run with a problem prints its summary and the one line that says what to do, no log line", async () => {
    const { rows } = await h.pool.query<{ state: string }>("SELECT state FROM accounts WHERE id = $1", [h.account.id]);
    await h.pool.query("UPDATE accounts SET state = 'needs_reauth', state_reason = 'refresh token revoked' WHERE id = $1", [h.account.id]);
    try {
      // Each of the account's runs is skipped: the table's note says why, the line what to do.
      const skipped = await dvault(["sync", "--once", "--only", "gallery"]);
      expect(skipped.code).toBe(4);
      expect(skipped.stdout).toMatch(/^\S+\s+gallery\s+FAILED\s/m);
      expect(skipped.stderr.trimEnd().split("\n")).toEqual([expect.stringMatching(/^dvault: .*dvault auth login --account /)]);
    } finally {
      await h.pool.query("UPDATE accounts SET state = $2, state_reason = NULL WHERE id = $1", [h.account.id, rows[0]?.state ?? "ok"]);
    }
    // A source the service fails (500 through the run's patience, none here): its error in the table, not a stack on stderr.
    h.sim.faults.add({ kind: "status_500", route: "/gallery", times: 1000 });
    try {
      const failed = await dvault(["sync", "--once", "--only", "gallery"], { DVAULT_RUN_ITEM_PATIENCE: "0s" });
      expect(failed.code).toBe(1);
      expect(failed.stdout).toMatch(/^\S+\s+gallery\s+FAILED\s/m);
      expect(jsonLines(failed.stderr)).toEqual([]);
      expect(failed.stderr.trimEnd().split("\n")).toEqual([expect.stringMatching(/^dvault: 1 source\(s\) failed: /)]);
    } finally {
      h.sim.faults.clear();
    }
  }, 60_000);

  it("sync --once: the table on stdout, nothing on stderr; its pacing waits are 'paced', and 'throttled' stays 0 with no 429", async () => {
    const seq = h.lastSeq();
    // A pace of one call a second: the calls of a run, a few ms of work apart, wait for the pacer.
    const run = await dvault(["sync", "--once", "--only", "gallery", "--full"], { DVAULT_API_RATE_START: "1", DVAULT_API_RATE_MAX: "1" });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const [header, row, ...rest] = run.stdout.trimEnd().split("\n");
    expect(rest).toEqual([]);
    expect(header?.split(/\s{2,}/)).toEqual(["account", "source", "result", "new", "changed", "removed", "api calls", "paced", "throttled", "time", "note"]);
    const cells = row?.split(/\s{2,}/) ?? [];
    const [calls, paced, throttled] = cells.slice(6, 9).map(Number);
    const refusals = h.sim.log().filter((e) => e.seq > seq && e.status === 429).length;
    expect({ result: cells[2], refusals, throttled }).toEqual({ result: "ok (full)", refusals: 0, throttled: 0 });
    expect(calls).toBeGreaterThan(1);
    // How many of them waited depends on how long the work between calls took (a loaded machine): at least one.
    expect(paced).toBeGreaterThanOrEqual(1);
    expect(paced).toBeLessThanOrEqual(calls ?? 0);
    // status says the same, in its own two fields.
    const status = await dvault(["status", "--json"]);
    const source = (JSON.parse(status.stdout) as { sources: { source: string; paced: number; throttled: number }[] }).sources.find(
      (s) => s.source === "gallery",
    );
    expect(source).toMatchObject({ paced, throttled: 0 });
  }, 60_000);

  it("a warning at the default verbosity is one plain line on stderr, never pino's JSON", async () => {
    // An answer the sync cannot read is kept and skipped, with a warning (src/api/http.ts).
    h.sim.faults.add({ kind: "broken_item", route: "/gallery", times: 1 });
    try {
      const run = await dvault(["sync", "--once", "--only", "gallery", "--full"]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^\S+\s+gallery\s+incomplete \(full\)\s/m);
      expect(run.stderr.trimEnd().split("\n")).toEqual([
        expect.stringMatching(
          /^dvault: warning: unreadable answer from the service: kept and skipped \(operation=gallery\.\S+ subject="item #0" detail=".+" account=\S+\)$/,
        ),
      ]);
    } finally {
      h.sim.faults.clear();
    }
  }, 60_000);

  it("download --once at the default verbosity: only the summary on stdout, nothing on stderr", async () => {
    await wantOriginalsAgain();
    const run = await dvault(["download", "--once"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(jsonLines(run.stdout)).toEqual([]);
    expect(run.stdout).toMatch(/^done\s+\d+/);
    expect(run.stdout).toMatch(/^failed\s+0$/m);
  }, 60_000);

  it("-v brings the info lines back, and a quota deferral is logged and counted as deferred (quota), never as a throttle", async () => {
    await wantOriginalsAgain();
    // No allowance at all: every original waits for the next quota window.
    const run = await dvault(["-v", "download", "--once"], { DVAULT_DOWNLOAD_QUOTA: "0" });
    expect(run.code, run.stderr).toBe(0);
    expect(jsonLines(run.stderr)).toEqual([]);
    const lines = run.stderr.trimEnd().split("\n").map(plainLine);
    expect(lines.length).toBeGreaterThan(0);
    // Info at most: no debug or trace line.
    expect(lines.filter((l) => /^(debug|trace): /.test(l.msg))).toEqual([]);
    const deferrals = lines.filter((l) => l.fields.delay === "deferred");
    expect(deferrals.length).toBeGreaterThan(0);
    for (const d of deferrals) expect(d.msg).toBe("deferred (quota): job waits for the next quota window");
    expect(lines.filter((l) => /throttl/i.test(l.msg) || l.fields.delay === "throttled")).toEqual([]);
    // The summary counts them where a deferral belongs: deferred, or degraded (a free rendition stored meanwhile).
    const count = (label: string) => Number(new RegExp(`^${label}\\s+(\\d+)`, "m").exec(run.stdout)?.[1]);
    expect(count("deferred") + count("degraded")).toBe(deferrals.length);
    expect(run.stdout).not.toMatch(/throttl/i);
  }, 60_000);

  it("-q prints nothing for a run that went well, and the summary and one line for a run with a problem", async () => {
    await wantOriginalsAgain();
    const quiet = await dvault(["-q", "download", "--once"], { DVAULT_DOWNLOAD_QUOTA: "0" });
    expect(quiet).toMatchObject({ code: 0, stdout: "", stderr: "" });
    // --json is printed whatever -q says: a script asked for it.
    const json = await dvault(["-q", "download", "--once", "--json"], { DVAULT_DOWNLOAD_QUOTA: "0" });
    expect(json).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(json.stdout)).toMatchObject({ failed: 0, left: { dueNow: 0 } });

    const { rows } = await h.pool.query<{ state: string }>("SELECT state FROM accounts WHERE id = $1", [h.account.id]);
    await h.pool.query("UPDATE accounts SET state = 'needs_reauth', state_reason = 'refresh token revoked' WHERE id = $1", [h.account.id]);
    try {
      const problem = await dvault(["-q", "sync", "--once", "--only", "gallery"]);
      expect(problem.code).toBe(4);
      expect(problem.stdout).toMatch(/^\S+\s+gallery\s+FAILED\s/m);
      expect(problem.stderr.trimEnd().split("\n")).toEqual([expect.stringMatching(/^dvault: .*dvault auth login --account /)]);
    } finally {
      await h.pool.query("UPDATE accounts SET state = $2, state_reason = NULL WHERE id = $1", [h.account.id, rows[0]?.state ?? "ok"]);
    }
  }, 60_000);
});
