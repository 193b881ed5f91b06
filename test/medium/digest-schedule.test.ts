// The digest schedule: two worker processes ticking at the same cron time send exactly one digest (the
// tick only enqueues a job whose id is the channel and the tick); ticks missed while nothing ran are
// caught up once at start, as one digest covering the whole gap.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { DigestRepository } from "../../src/db/digest.repository.ts";
import { runDigest } from "../../src/digest/run-digest.ts";
import { DigestScheduler } from "../../src/digest/schedule.ts";
import { createLogger } from "../../src/log.ts";
import { Producer } from "../../src/queue/producer.ts";
import { createDigestFixture, type DigestFixture } from "../helpers/digest-fixture.ts";
import { startTestSmtp, type TestSmtp } from "../helpers/digest-mail.ts";
import { TEST_ENGINE, TEST_REDIS_URL } from "../helpers/env.ts";
import { queueOf } from "../helpers/producer-queue.ts";

const log = createLogger({ level: "silent" });

function startChild(env: Record<string, string>): { child: ChildProcessWithoutNullStreams; lines: AsyncIterator<string> } {
  const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/medium/digest-tick-child.ts")], {
    env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "silent", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  child.on("exit", (code) => {
    if (code !== 0) console.error(`digest-tick-child exited ${code}: ${stderr}`);
  });
  return { child, lines: readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]() };
}

describe("the digest cron", () => {
  let smtp: TestSmtp;
  let f: DigestFixture;
  const children: ChildProcessWithoutNullStreams[] = [];

  // A fresh mirror, mail server and queue per test: each counts the digests and mails it finds.
  beforeEach(async () => {
    smtp = await startTestSmtp();
    f = await createDigestFixture({
      DVAULT_DIGEST_CHANNELS: "smtp",
      DVAULT_SMTP_HOST: "127.0.0.1",
      DVAULT_SMTP_PORT: String(smtp.port),
      DVAULT_DIGEST_CRON: "0 8 * * *",
      DVAULT_DIGEST_TZ: "Europe/Berlin",
    });
  });
  afterEach(async () => {
    for (const child of children) if (child.exitCode === null) child.kill();
    await f?.close();
    await smtp?.close();
  });

  it("two worker processes ticking at the same time send exactly one digest", async () => {
    // 08:00 in Berlin (CET) is 07:00 UTC.
    const tick = "2026-11-03T07:00:00.000Z";
    await f.addFaves(2, new Date("2026-11-03T05:00:00Z"));
    const env = {
      DATABASE_URL: f.db.url,
      REDIS_URL: TEST_REDIS_URL,
      DVAULT_ENGINE: TEST_ENGINE,
      DVAULT_REDIS_PREFIX: f.redis.prefix,
      DVAULT_DIGEST_CHANNELS: "smtp",
      DVAULT_DIGEST_CRON: "0 8 * * *",
      DVAULT_DIGEST_TZ: "Europe/Berlin",
      DVAULT_SMTP_HOST: "127.0.0.1",
      DVAULT_SMTP_PORT: String(smtp.port),
      DVAULT_SMTP_FROM: "dvault <dvault@example.org>",
      DVAULT_SMTP_TO: "me@example.org",
      DVAULT_ARCHIVE_DIR: "/tmp",
      DVAULT_TEST_TICK: tick,
    };
    const workers = [startChild(env), startChild(env)];
    children.push(...workers.map((w) => w.child));
    for (const w of workers) expect((await w.lines.next()).value).toBe("ready");
    for (const w of workers) w.child.stdin.write("go\n");
    const results = await Promise.all(workers.map(async (w) => JSON.parse((await w.lines.next()).value as string) as { ticked: number; ran: number }));
    // Both exit on their own once done.
    await Promise.all(workers.map((w) => (w.child.exitCode !== null ? Promise.resolve() : new Promise((resolve) => w.child.once("exit", resolve)))));
    expect(workers.map((w) => w.child.exitCode)).toEqual([0, 0]);

    expect(results.map((r) => r.ticked)).toEqual([1, 1]);
    // One job between them, so one process ran it.
    expect(results.map((r) => r.ran).sort()).toEqual([0, 1]);
    expect(smtp.received).toHaveLength(1);
    expect(smtp.received[0]?.subject).toBe("dvault digest 3 Nov: 2 faves");
    const rows = await new DigestRepository(f.services.pool).listDigests(10);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: "sent", attempts: 1, trigger: "cron" });
    expect(rows[0]?.windowStart.toISOString()).toBe("2026-11-02T07:00:00.000Z");
    expect(rows[0]?.windowEnd.toISOString()).toBe(tick);
    const producer = new Producer([...JOB_DEFINITIONS], f.services.queues);
    const jobs = await queueOf(producer, "digest").getJobs(["completed", "failed", "waiting", "delayed", "active"]);
    expect(jobs.map((j) => j.id)).toEqual([`digest-smtp-${Date.parse(tick)}`]);
  }, 60_000);

  it("ticks missed while nothing ran are caught up once at start, as one digest covering the whole gap", async () => {
    // The last digest ended on 3 Nov (sent at its 08:00 tick: the fixture's clock); the machine was off until
    // 6 Nov 10:30 Berlin time.
    await f.addFaves(2, new Date("2026-11-03T05:00:00Z"));
    const sent = await runDigest({ channel: "smtp", tick: "2026-11-03T07:00:00.000Z", trigger: "cron" }, { services: f.services, attempt: 1, maxAttempts: 6 });
    expect(sent.status).toBe("sent");
    const producer = new Producer([...JOB_DEFINITIONS], f.services.queues);
    const repo = new DigestRepository(f.services.pool);
    const enqueued: string[] = [];
    const scheduler = (nowIso: string) =>
      new DigestScheduler({
        config: f.services.config.digest,
        enqueue: async (p) => {
          const job = await producer.enqueue("digest.send", p);
          enqueued.push(`${job.id}`);
        },
        lastWindowEnd: (c) => repo.lastWindowEnd(c),
        log,
        now: () => Date.parse(nowIso),
      });
    try {
      await f.addFaves(1, new Date("2026-11-04T12:00:00Z"));
      await f.addFaves(2, new Date("2026-11-05T12:00:00Z"));
      await f.addFaves(3, new Date("2026-11-06T06:00:00Z"));
      const first = scheduler("2026-11-06T09:30:00Z");
      const caught = await first.catchUp();
      await first.stop();
      expect(caught).toEqual([{ channel: "smtp", tick: "2026-11-06T07:00:00.000Z", trigger: "catch_up" }]);
      // A second process starting at the same time adds nothing: same job id.
      const second = scheduler("2026-11-06T09:31:00Z");
      await second.catchUp();
      await second.stop();
      const waiting = await queueOf(producer, "digest").getJobs(["waiting", "delayed", "prioritized"]);
      expect(waiting.map((j) => j.id)).toEqual([`digest-smtp-${Date.parse("2026-11-06T07:00:00Z")}`]);
      expect(new Set(enqueued).size).toBe(1);

      // Running it (here directly, as the job handler would) sends one digest for 3 Nov 08:00 → 6 Nov 08:00.
      f.clock.now = Date.parse("2026-11-06T09:30:05Z");
      const job = waiting[0]!;
      const result = await runDigest(job.data as Parameters<typeof runDigest>[0], { services: f.services, attempt: 1, maxAttempts: 6 });
      expect(result.status).toBe("sent");
      if (result.status !== "sent") return;
      expect(result.window.start.toISOString()).toBe("2026-11-03T07:00:00.000Z");
      expect(result.window.end.toISOString()).toBe("2026-11-06T07:00:00.000Z");
      expect(result.counts.faves).toBe(6);
      const mail = smtp.received.at(-1);
      expect(mail?.subject).toBe("dvault digest 6 Nov: 6 faves");
      expect(mail?.text).toContain("3 Nov, 08:00 – 6 Nov 2026, 08:00 (Europe/Berlin)");
      await job.remove();

      // Caught up: a later start finds nothing missed.
      const third = scheduler("2026-11-06T09:45:00Z");
      expect(await third.catchUp()).toEqual([]);
      await third.stop();
    } finally {
      await producer.close();
    }
  });
});
