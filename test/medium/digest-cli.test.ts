// `dvault digest` as a person runs it: --preview writes the files and says where, without sending or
// moving any window; --send goes through the digest job and records it; --history lists it; --alerts runs the
// worker's alerts job.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DigestRepository } from "../../src/db/digest.repository.ts";
import { runDigest } from "../../src/digest/run-digest.ts";
import { freePort } from "../../src/free-port.ts";
import { createDigestFixture, type DigestFixture } from "../helpers/digest-fixture.ts";
import { startTestSmtp } from "../helpers/digest-mail.ts";
import { TEST_ENGINE, TEST_REDIS_URL } from "../helpers/env.ts";

const BIN = path.resolve("bin/dvault.js");

function dvault(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "silent", ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("dvault digest", () => {
  let f: DigestFixture;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    f = await createDigestFixture();
    dir = await mkdtemp(path.join(os.tmpdir(), "dvault-digest-cli-"));
    env = { DATABASE_URL: f.db.url, REDIS_URL: TEST_REDIS_URL, DVAULT_ENGINE: TEST_ENGINE, DVAULT_REDIS_PREFIX: f.redis.prefix, DVAULT_ARCHIVE_DIR: dir };
    // The CLI runs on the real clock: news from an hour ago.
    await f.addFaves(5, new Date(Date.now() - 3_600_000));
  });
  afterAll(async () => {
    await f?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("--preview renders the digest to files and says where, without sending or moving a window", async () => {
    const out = path.join(dir, "preview");
    // Whatever other tests sent before: the preview adds no digest and moves no window.
    const repo = new DigestRepository(f.services.pool);
    const digestsBefore = await repo.listDigests();
    const windowBefore = await repo.lastWindowEnd("file");
    const r = await dvault(["digest", "--preview", "--since", "2d", "--out", out], env);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^dvault digest \d+ \w+: 5 faves\n/);
    expect(r.stdout).toContain(`html: ${path.join(out, "digest.html")}`);
    expect(r.stdout).toContain(`text: ${path.join(out, "digest.txt")}`);
    expect(r.stdout).toContain("Preview only: nothing was sent and no digest window moved.");
    expect(await readFile(path.join(out, "digest.txt"), "utf8")).toContain("5 people faved");
    expect(await readFile(path.join(out, "digest.html"), "utf8")).toContain("Preview: nothing was sent");
    expect(await repo.listDigests()).toEqual(digestsBefore);
    expect(await repo.lastWindowEnd("file")).toEqual(windowBefore);
  });

  it("--preview refuses a --since not in the past and an --out that cannot be written in one line, not an unexpected error", async () => {
    const future = await dvault(["digest", "--preview", "--since", "2999-01-01"], env);
    expect(future.stderr).toBe('dvault: --since "2999-01-01" is 2999-01-01T00:00:00.000Z, not in the past: give an earlier time\n');
    expect(future.code).toBe(1);
    // A file where the folder would go (a path typed one level too deep).
    const file = path.join(dir, "a-file");
    await writeFile(file, "not a folder");
    const blocked = await dvault(["digest", "--preview", "--since", "2d", "--out", path.join(file, "preview")], env);
    expect(blocked.stderr).toBe(`dvault: cannot write the preview to ${path.join(file, "preview")} (ENOTDIR): give --out a folder that can be written\n`);
    expect(blocked.stdout).toBe("");
    expect(blocked.code).toBe(1);
  });

  it("--send without a channel says what to set", async () => {
    const r = await dvault(["digest", "--send"], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      "dvault: no digest channel is configured: set DVAULT_DIGEST_CHANNELS (smtp, file, webhook, ntfy, discord), or use dvault digest --preview\n",
    );
  });

  it("--send delivers through the digest job now, and --history lists it", async () => {
    const files = path.join(dir, "digests");
    // A first window starts at the schedule's previous tick: a yearly one puts it well before the faves, at any
    // time of day (with the daily default, a run in the hour after it saw the faves before its window).
    const sendEnv = { ...env, DVAULT_DIGEST_CHANNELS: "file", DVAULT_DIGEST_DIR: files, DVAULT_DIGEST_CRON: "0 0 1 1 *" };
    const r = await dvault(["digest", "--send"], sendEnv);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^file: sent — dvault digest \d+ \w+: 5 faves\n$/);
    const written = await readdir(files);
    expect(written.filter((n) => n.endsWith(".html"))).toHaveLength(1);
    expect(written.filter((n) => n.endsWith(".txt"))).toHaveLength(1);
    const [row] = await new DigestRepository(f.services.pool).listDigests();
    expect(row).toMatchObject({ channel: "file", status: "sent", trigger: "manual" });

    const history = await dvault(["digest", "--history"], sendEnv);
    expect(history.code).toBe(0);
    expect(history.stdout).toContain("file ");
    expect(history.stdout).toMatch(/sent \S+ {2}\(1 attempt\)/);
    expect(history.stdout).toContain("5 faves");
  });

  it("--send through a channel that did not deliver says so and exits 1, for a script's `digest --send ||`", async () => {
    // Nothing listens there: the SMTP server is down.
    const smtp = {
      DVAULT_SMTP_HOST: "127.0.0.1",
      DVAULT_SMTP_PORT: String(await freePort()),
      DVAULT_SMTP_FROM: "dvault@example.org",
      DVAULT_SMTP_TO: "me@example.org",
    };
    const r = await dvault(["digest", "--send"], { ...env, ...smtp, DVAULT_DIGEST_CHANNELS: "smtp", DVAULT_DIGEST_CRON: "0 0 1 1 *" });
    // The other tests' digests say nothing of this one (the health section counts digests not delivered).
    await f.services.pool.query("DELETE FROM digests WHERE channel = 'smtp'");
    expect(r.stdout).toMatch(/^smtp: delivery failed \(SMTP delivery to 127\.0\.0\.1:\d+ failed: ESOCKET: connect ECONNREFUSED [^)]+\); retrying with backoff/);
    expect(r.code).toBe(1);
  });

  it("--send and --history name a recipient the SMTP server refused while the others got the digest", async () => {
    const smtp = await startTestSmtp();
    smtp.refuseRecipient("typo@example.org");
    const mail = { DVAULT_SMTP_HOST: "127.0.0.1", DVAULT_SMTP_PORT: String(smtp.port), DVAULT_SMTP_FROM: "dvault@example.org" };
    const sendEnv = { ...env, ...mail, DVAULT_SMTP_TO: "me@example.org, typo@example.org", DVAULT_DIGEST_CHANNELS: "smtp", DVAULT_DIGEST_CRON: "0 0 1 1 *" };
    try {
      const r = await dvault(["digest", "--send"], sendEnv);
      const refused = "(not to typo@example.org: the SMTP server refused it; check DVAULT_SMTP_TO)";
      expect(r.stdout).toMatch(new RegExp(`^smtp: sent — dvault digest \\d+ \\w+: 5 faves ${literal(refused)}\n$`));
      expect(r.code).toBe(0);
      expect(smtp.received.map((m) => m.to)).toEqual([["me@example.org"]]);
      const history = await dvault(["digest", "--history"], sendEnv);
      expect(history.stdout).toContain(`\n        ${refused}\n`);
    } finally {
      await smtp.close();
      // The other tests' smtp digests start afresh (their window, their health section).
      await f.services.pool.query("DELETE FROM digests WHERE channel = 'smtp'");
      await f.services.pool.query("DELETE FROM digest_state WHERE channel = 'smtp'");
    }
  });

  it("--history names a recipient the SMTP server deferred at every attempt as refused after deferrals, not as a typo", async () => {
    const smtp = await startTestSmtp();
    smtp.deferRecipient("full@example.org", 100);
    const to = ["me@example.org", "full@example.org"];
    const smtpConfig = { ...f.services.config.digest.smtp!, host: "127.0.0.1", port: smtp.port, secure: false, to };
    const services = {
      ...f.services,
      config: { ...f.services.config, digest: { ...f.services.config.digest, channels: ["smtp" as const], smtp: smtpConfig } },
    };
    try {
      // The digest's one and last attempt: full's server still defers it.
      const tick = new Date().toISOString();
      expect(await runDigest({ channel: "smtp", tick, trigger: "manual" }, { services, attempt: 1, maxAttempts: 1 })).toMatchObject({ status: "sent" });
      const history = await dvault(["digest", "--history"], env);
      expect(history.stdout).toContain("\n        (not to full@example.org: the SMTP server deferred it at every attempt, refused after deferrals)\n");
    } finally {
      await smtp.close();
      await f.services.pool.query("DELETE FROM digests WHERE channel = 'smtp'");
      await f.services.pool.query("DELETE FROM digest_state WHERE channel = 'smtp'");
    }
  });

  it("--alerts runs the worker's alerts.evaluate job here, baselines included", async () => {
    const { pool } = f.services;
    // A source whose first sweep just finished: only the alerts job (jobs/alerts/handler.ts) records its baseline.
    await pool.query("DELETE FROM digest_baselines WHERE account_id = $1 AND source = 'profile'", [f.accountId]);
    await pool.query("INSERT INTO sync_sources (account_id, source, last_complete_sweep_at) VALUES ($1, 'profile', now())", [f.accountId]);
    const r = await dvault(["digest", "--alerts"], env);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+ open incident\(s\), nothing new to notify\n$|^(notified|reminded|resolved|could not notify)/);
    const { rows } = await pool.query("SELECT 1 FROM digest_baselines WHERE account_id = $1 AND source = 'profile'", [f.accountId]);
    expect(rows).toHaveLength(1);
  });
});

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}
