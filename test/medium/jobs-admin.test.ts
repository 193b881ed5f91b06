// `dvault jobs`: failed jobs with reason, attempts, times and payload ids, filtered by queue and source;
// retry one (with a fresh attempt budget) or all; pause and resume a queue. On real Redis, through the
// QueueAdmin the CLI and the dashboard share, and once through the real CLI.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { UnrecoverableError, Worker, type Job } from "bullmq";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { formatFailed } from "../../src/cli/jobs.ts";
import { SOURCE_NAMES } from "../../src/config-defaults.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { createRedis } from "../../src/queue/redis.ts";
import { describeNeedingRedis, REDIS_IN_RUN } from "../helpers/needs-redis.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";

const run = promisify(execFile);
let r: TestRedis;
let admin: QueueAdmin;
let worker: Worker;
const processed: string[] = [];

/** Runs sync jobs; those whose payload says fail=true fail with a reason naming their source. */
async function processor(job: Job) {
  processed.push(job.id ?? "");
  if (job.data.fail) throw new UnrecoverableError(`gallery walk failed for ${job.data.source}: HTTP 500 after 3 retries`);
  return { status: "done" };
}

/** vi.waitFor, not expect.poll: beforeAll waits with it too, and expect.poll works only inside a test. */
async function until(check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  await vi.waitFor(async () => expect(await check(), what).toBe(true), { timeout: ms, interval: 25 });
}

// BullMQ's queues on Redis, a worker on Redis and the CLI on Redis: on a run without Redis, everything here skips.
beforeAll(async () => {
  if (!REDIS_IN_RUN) return;
  r = await createTestRedis();
  admin = new QueueAdmin(r.queues);
  worker = new Worker("sync", processor, { connection: createRedis(r.url, "worker"), prefix: r.prefix });
  const q = admin.queue("sync");
  await q.add("sync.source", { accountId: 1, source: "gallery", key: "", fail: true }, { jobId: "g1", attempts: 3 });
  await q.add("sync.source", { accountId: 1, source: "notes", key: "", fail: true }, { jobId: "n1", attempts: 3 });
  await q.add("sync.source", { accountId: 2, source: "gallery", key: "", fail: true }, { jobId: "g2", attempts: 3 });
  await q.add("sync.source", { accountId: 1, source: "messages", key: "" }, { jobId: "m1" });
  await until(async () => (await q.getJobCounts("failed")).failed === 3 && processed.includes("m1"), "three failures");
});
afterAll(async () => {
  await worker?.close();
  await admin?.close();
  await r?.cleanup();
});

describeNeedingRedis(QueueAdmin.name, () => {
  it("lists failed jobs with reason, attempts, times and payload, newest first", async () => {
    const failed = await admin.failed();
    expect(failed.map((j) => j.id).sort()).toEqual(["g1", "g2", "n1"]);
    const g1 = failed.find((j) => j.id === "g1")!;
    expect(g1).toMatchObject({ queue: "sync", name: "sync.source", attemptsMade: 1, attempts: 3, data: { accountId: 1, source: "gallery", key: "" } });
    expect(g1.reason).toBe("gallery walk failed for gallery: HTTP 500 after 3 retries");
    expect(Date.parse(g1.failedAt!)).toBeGreaterThanOrEqual(Date.parse(g1.createdAt));
    expect(failed.map((j) => j.failedAt)).toEqual([...failed.map((j) => j.failedAt)].sort().reverse());
    const text = formatFailed(failed, Date.now());
    expect(text).toContain("sync/g1  sync.source  accountId=1 source=gallery");
    expect(text).toContain("reason: gallery walk failed for gallery");
  });

  it("filters by queue and by source", async () => {
    expect((await admin.failed({ source: "gallery" })).map((j) => j.id).sort()).toEqual(["g1", "g2"]);
    expect(await admin.failed({ queue: "downloads" })).toEqual([]);
  });

  it("retries one job with its attempts reset, and refuses one that did not fail", async () => {
    const outcome = await admin.retry("n1");
    expect(outcome).toEqual({ retried: [{ queue: "sync", id: "n1" }], skipped: [] });
    await until(async () => processed.filter((id) => id === "n1").length === 2, "n1 to run again");
    await until(async () => (await admin.queue("sync").getJobState("n1")) === "failed", "n1 to fail again");
    expect((await admin.failed()).find((j) => j.id === "n1")?.attemptsMade).toBe(1);
    expect((await admin.retry("m1")).skipped[0]?.reason).toBe("it is completed, not failed");
    // Looked for in every queue: none is named as the one it was not in.
    expect((await admin.retry("nope")).skipped).toEqual([{ id: "nope", reason: "no such job in any queue (it may have been retried already or expired)" }]);
    expect((await admin.retry("nope", "downloads")).skipped).toEqual([
      { queue: "downloads", id: "nope", reason: "no such job in the downloads queue (it may have been retried already or expired)" },
    ]);
  });

  it("retries all failed jobs of a source", async () => {
    const outcome = await admin.retryAll({ source: "gallery" });
    expect(outcome.retried.map((j) => j.id).sort()).toEqual(["g1", "g2"]);
    await until(async () => processed.filter((id) => id === "g1" || id === "g2").length === 4, "g1 and g2 to run again");
    // Their failures recorded too, before another test (in any order) reads the failed jobs: a run that started is
    // not yet one the queue has recorded as failed.
    await until(
      async () => (await Promise.all(["g1", "g2"].map((id) => admin.queue("sync").getJobState(id)))).every((s) => s === "failed"),
      "g1 and g2 to fail again",
    );
  });

  it("pauses and resumes a queue, and counts its jobs", async () => {
    await admin.pause("sync");
    const addedAt = Date.now();
    await admin.queue("sync").add("sync.source", { accountId: 1, source: "notes", key: "" }, { jobId: "while-paused" });
    // No event says "the worker did not take it": give the running worker time it would need (a few ms).
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Counted as of a minute after the add (the clock counts() takes), so the age is exact, not a race.
    const counts = (await admin.counts(addedAt + 60_000)).find((c) => c.name === "sync")!;
    expect(counts).toMatchObject({ paused: true, waiting: 1 });
    expect(counts.oldestWaitingMs).toBeGreaterThan(59_000);
    expect(counts.oldestWaitingMs).toBeLessThanOrEqual(60_000);
    expect(processed).not.toContain("while-paused");
    await admin.resume("sync");
    await until(async () => processed.includes("while-paused"), "the job to run after resume");
  });
});

describeNeedingRedis("dvault jobs", () => {
  const env = () => ({
    PATH: process.env.PATH ?? "",
    HOME: "/nonexistent-home",
    REDIS_URL: r.url,
    DVAULT_REDIS_PREFIX: r.prefix,
    LOG_LEVEL: "silent",
  });

  it("lists failures as JSON and retries one by the id it printed", async () => {
    const { stdout } = await run(process.execPath, ["bin/dvault.js", "jobs", "failed", "--source", "notes", "--json"], { env: env(), timeout: 30_000 });
    const failed = JSON.parse(stdout) as Array<{ id: string; queue: string; reason: string }>;
    expect(failed.map((j) => `${j.queue}/${j.id}`)).toEqual(["sync/n1"]);
    const runs = processed.filter((id) => id === "n1").length;
    const retried = await run(process.execPath, ["bin/dvault.js", "jobs", "retry", "sync/n1"], { env: env(), timeout: 30_000 });
    expect(retried.stdout.trim()).toBe("retried sync/n1");
    // Run and failed again before another test (in any order) reads or retries the failed jobs.
    await until(
      async () => processed.filter((id) => id === "n1").length > runs && (await admin.queue("sync").getJobState("n1")) === "failed",
      "n1 to fail again",
    );
  });

  it("refuses a --limit that is not a whole number from 1, or an unknown --source, rather than saying nothing failed", async () => {
    const refusals: Array<[string[], string]> = [
      [["--limit", "abc"], 'dvault: --limit expects a whole number from 1, not "abc"'],
      [["--limit", "0"], 'dvault: --limit expects a whole number from 1, not "0"'],
      [["--source", "galery"], `dvault: unknown source "galery": choose from ${SOURCE_NAMES.join(", ")}`],
    ];
    for (const [args, line] of refusals) {
      const failure = await run(process.execPath, ["bin/dvault.js", "jobs", "failed", ...args], { env: env(), timeout: 30_000 }).catch(
        (err: { stderr: string; code: number }) => err,
      );
      expect("stderr" in failure && failure.stderr.trim(), args.join(" ")).toBe(line);
    }
  });

  it("refuses --source beside a job id, which it took and did nothing with (it goes with --all)", async () => {
    const failure = await run(process.execPath, ["bin/dvault.js", "jobs", "retry", "n1", "--source", "gallery"], { env: env(), timeout: 30_000 }).catch(
      (err: { stderr: string; code: number }) => err,
    );
    expect(failure).toMatchObject({
      code: 1,
      stderr: "dvault: --source goes with --all: a job id names one job (dvault jobs failed --source shows its ids)\n",
    });
  });

  it("refuses an unknown queue in one line", async () => {
    const failure = await run(process.execPath, ["bin/dvault.js", "jobs", "pause", "nope"], { env: env(), timeout: 30_000 }).catch(
      (err: { stderr: string; code: number }) => err,
    );
    expect("stderr" in failure && failure.stderr.trim()).toBe('dvault: unknown queue "nope": choose from sync, downloads, maintenance, digest');
  });
});
