// Delivery is at-least-once and the window is never lost: a refused delivery is retried by the queue with
// backoff and the window moves only once it succeeds; a crash after the server accepted the message
// resends it with the same Message-ID; a digest whose every attempt failed is recorded as failed, the next
// one covers its window and says so; an empty window sends nothing unless configured to.
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fileDeliverer } from "../../src/digest/deliver/file.ts";
import { smtpDeliverer } from "../../src/digest/deliver/smtp.ts";
import { DigestRepository } from "../../src/db/digest.repository.ts";
import { DIGEST_JOB } from "../../jobs/digest/definition.ts";
import { runDigest, type DigestJobPayload } from "../../src/digest/run-digest.ts";
import type { Deliverer } from "../../src/digest/types.ts";
import { createDigestFixture, digestWorker, type DigestFixture } from "../helpers/digest-fixture.ts";
import { startTestSmtp, type TestSmtp } from "../helpers/digest-mail.ts";
import { queueOf } from "../helpers/producer-queue.ts";

const DAY = 86_400_000;

const POLL = { timeout: 20_000, interval: 50 };

describe("digest delivery: retries and the window", () => {
  let smtp: TestSmtp;
  let f: DigestFixture;
  let repo: DigestRepository;

  // A fresh database, Redis prefix and mail box per test: each test moves the digest windows and counts mails.
  beforeEach(async () => {
    smtp = await startTestSmtp();
    f = await createDigestFixture({ DVAULT_DIGEST_CHANNELS: "smtp,file", DVAULT_SMTP_HOST: "127.0.0.1", DVAULT_SMTP_PORT: String(smtp.port) });
    repo = new DigestRepository(f.services.pool);
  });
  afterEach(async () => {
    await f?.close();
    await smtp?.close();
  });

  /** The fixture for tests that start after a delivered digest: one fave, sent over SMTP for the window ending at `tick`. */
  async function deliveredAt(tick: Date): Promise<void> {
    f.clock.now = tick.getTime() + 5000;
    await f.addFaves(1, new Date(tick.getTime() - 3_600_000));
    const result = await runDigest({ channel: "smtp", tick: tick.toISOString(), trigger: "cron" }, { services: f.services, attempt: 1, maxAttempts: 6 });
    expect(result.status).toBe("sent");
  }

  /** The fixture's services with DVAULT_SMTP_TO set to `to`. */
  function servicesTo(to: string[]): DigestFixture["services"] {
    const smtp = { ...f.services.config.digest.smtp!, to };
    return { ...f.services, config: { ...f.services.config, digest: { ...f.services.config.digest, smtp } } };
  }

  it("a delivery the SMTP server refuses once is retried by the queue with backoff; the window moves only after it succeeds", async () => {
    const tick = new Date("2026-11-03T08:00:00Z");
    await f.addFaves(3, new Date(tick.getTime() - 3_600_000));
    smtp.rejectNext(1);
    const worker = digestWorker(f);
    const { host, producer } = worker;
    try {
      const payload: DigestJobPayload = { channel: "smtp", tick: tick.toISOString(), trigger: "cron" };
      // The catalogue's options (attempts, job id), with a short backoff so the test need not wait a minute.
      const options = { ...producer.optionsFor(DIGEST_JOB, payload), backoff: { type: "fixed" as const, delay: 1500 } };
      const job = await queueOf(producer, "digest").add(DIGEST_JOB, payload, options);
      host.start();

      // The refused attempt is recorded and the window has not moved.
      const latest = async () => (await repo.listDigests(1))[0];
      await expect.poll(latest, { ...POLL, message: "the first failure" }).toMatchObject({ attempts: 1, status: "pending" });
      const failed = (await latest())!;
      expect(failed.lastError).toBe(`SMTP delivery to 127.0.0.1:${smtp.port} failed: 451 mailbox temporarily unavailable, try again later`);
      expect(await repo.lastWindowEnd("smtp")).toBeNull();
      expect(smtp.received).toHaveLength(0);

      // The retry delivers the same digest.
      const [mail] = await smtp.waitFor(1);
      await expect.poll(latest, { ...POLL, message: "the digest to be sent" }).toMatchObject({ status: "sent" });
      const sent = await latest();
      expect(smtp.rejected).toBe(1);
      expect(sent).toMatchObject({ attempts: 2, lastError: null, messageId: mail?.messageId });
      expect(mail?.subject).toContain("3 faves");
      expect(await repo.lastWindowEnd("smtp")).toEqual(tick);
      // The handler marks the digest sent before the queue records its job's end (after the handler returns, and the
      // digest's lock is released): the job is waited for, not read once.
      const recorded = async () => {
        const finished = await queueOf(producer, "digest").getJob(job.id ?? "");
        return { attemptsMade: finished?.attemptsMade, state: await finished?.getState() };
      };
      await expect.poll(recorded, { ...POLL, message: "the job to be recorded as completed" }).toEqual({ attemptsMade: 2, state: "completed" });
    } finally {
      await worker.close();
    }
  });

  it("a crash after the server accepted the message resends it with the same Message-ID and idempotency key", async () => {
    await deliveredAt(new Date("2026-11-03T08:00:00Z"));
    const tick = new Date("2026-11-04T08:00:00Z");
    f.clock.now = tick.getTime() + 5000;
    await f.addFaves(2, new Date(tick.getTime() - 3_600_000));
    const real = smtpDeliverer(f.services.config.digest.smtp!);
    const crashing: Deliverer = {
      channel: "smtp",
      async deliver(message) {
        await real.deliver(message);
        throw new Error("worker killed after the SMTP server accepted the message");
      },
    };
    const payload: DigestJobPayload = { channel: "smtp", tick: tick.toISOString(), trigger: "cron" };
    await expect(runDigest(payload, { services: f.services, attempt: 1, maxAttempts: 6, deliverer: crashing })).rejects.toThrow(/worker killed/);
    expect(await repo.lastWindowEnd("smtp")).toEqual(new Date("2026-11-03T08:00:00Z"));

    const result = await runDigest(payload, { services: f.services, attempt: 2, maxAttempts: 6 });
    expect(result.status).toBe("sent");
    const [first, second] = smtp.received.slice(-2);
    expect(second?.messageId).toBe(first?.messageId);
    expect(second?.messageId).toBe("<dvault-digest-smtp-20261103T080000Z-20261104T080000Z@example.org>");
    expect(second?.headers.get("x-dvault-idempotency-key")).toBe(first?.headers.get("x-dvault-idempotency-key"));
    expect(second?.subject).toBe(first?.subject);
    expect(await repo.lastWindowEnd("smtp")).toEqual(tick);
    const rows = (await repo.listDigests(10)).filter((r) => r.windowEnd.getTime() === tick.getTime());
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: "sent", attempts: 2 });
  });

  it("a recipient the SMTP server defers (450, greylisted) while it takes the message for another is sent it alone by the retry", async () => {
    const services = servicesTo(["me@example.org", "Partner <new@example.org>"]);
    const tick = new Date("2026-11-03T08:00:00Z");
    await f.addFaves(2, new Date(tick.getTime() - 3_600_000));
    smtp.deferRecipient("new@example.org", 1);
    const payload: DigestJobPayload = { channel: "smtp", tick: tick.toISOString(), trigger: "cron" };
    // The first attempt reaches me only: it fails, saying who waits and that the retry sends it to them.
    await expect(runDigest(payload, { services, attempt: 1, maxAttempts: 6 })).rejects.toThrow(
      /^SMTP delivery to 127\.0\.0\.1:\d+ deferred new@example\.org \(450 greylisted, try again in 5 minutes\) while me@example\.org got it: the retry sends it to them alone$/,
    );
    expect(smtp.received.map((m) => m.to)).toEqual([["me@example.org"]]);
    expect(await repo.lastWindowEnd("smtp")).toBeNull();
    expect((await repo.listDigests(1))[0]).toMatchObject({ status: "pending", attempts: 1 });

    // The retry: to the deferred recipient alone, the same message; the digest is sent, to both, refusing nobody.
    const result = await runDigest(payload, { services, attempt: 2, maxAttempts: 6 });
    expect(result).toMatchObject({ status: "sent", refused: [] });
    expect(smtp.received.map((m) => m.to)).toEqual([["me@example.org"], ["new@example.org"]]);
    expect(smtp.received[1]?.messageId).toBe(smtp.received[0]?.messageId);
    expect(await repo.lastWindowEnd("smtp")).toEqual(tick);
    const [sent] = await repo.listDigests(1);
    expect(sent).toMatchObject({ status: "sent", attempts: 2 });
    expect(sent?.delivery?.accepted).toEqual(["me@example.org", "new@example.org"]);
  });

  it("a recipient the SMTP server defers at every attempt (a 4xx, as for a full mailbox) is refused after deferrals by the last one: the digest is sent and its window moves", async () => {
    const services = servicesTo(["me@example.org", "Partner <full@example.org>"]);
    const tick = new Date("2026-11-03T08:00:00Z");
    await f.addFaves(2, new Date(tick.getTime() - 3_600_000));
    smtp.deferRecipient("full@example.org", 100);
    const payload: DigestJobPayload = { channel: "smtp", tick: tick.toISOString(), trigger: "cron" };
    // The attempts before the last retry the deferred recipient alone, and fail.
    await expect(runDigest(payload, { services, attempt: 1, maxAttempts: 3 })).rejects.toThrow(/deferred full@example\.org .* while me@example\.org got it/);
    await expect(runDigest(payload, { services, attempt: 2, maxAttempts: 3 })).rejects.toThrow(/deferred full@example\.org .* while me@example\.org got it/);
    expect(await repo.lastWindowEnd("smtp")).toBeNull();
    // The last: the recipient still deferred is counted as refused, after deferrals; me got it once.
    const result = await runDigest(payload, { services, attempt: 3, maxAttempts: 3 });
    expect(result).toMatchObject({ status: "sent", refused: ["full@example.org"] });
    expect(smtp.received.map((m) => m.to)).toEqual([["me@example.org"]]);
    expect(await repo.lastWindowEnd("smtp")).toEqual(tick);
    const [sent] = await repo.listDigests(1);
    expect(sent).toMatchObject({ status: "sent", attempts: 3, lastError: null });
    expect(sent?.delivery).toMatchObject({ accepted: ["me@example.org"], rejected: ["full@example.org"], refusedAfterDeferrals: ["full@example.org"] });
  });

  it("when every attempt fails the digest is recorded as failed; the next one covers its window and reports it", async () => {
    const t1 = new Date("2026-11-05T08:00:00Z");
    const t2 = new Date(t1.getTime() + DAY);
    await deliveredAt(new Date("2026-11-04T08:00:00Z"));
    f.clock.now = t1.getTime() + 5000;
    await f.addFaves(4, new Date(t1.getTime() - 3_600_000));
    smtp.rejectNext(2);
    const before = smtp.received.length;
    const payload: DigestJobPayload = { channel: "smtp", tick: t1.toISOString(), trigger: "cron" };
    for (const attempt of [1, 2]) {
      await expect(runDigest(payload, { services: f.services, attempt, maxAttempts: 2 })).rejects.toThrow(/451/);
    }
    const [failed] = await repo.listDigests(1);
    expect(failed).toMatchObject({ status: "failed", attempts: 2 });
    expect(await repo.lastWindowEnd("smtp")).toEqual(new Date("2026-11-04T08:00:00Z"));

    f.clock.now = t2.getTime() + 5000;
    await f.addFaves(1, new Date(t2.getTime() - 3_600_000));
    const result = await runDigest({ channel: "smtp", tick: t2.toISOString(), trigger: "cron" }, { services: f.services, attempt: 1, maxAttempts: 6 });
    expect(result.status).toBe("sent");
    if (result.status !== "sent") return;
    // Nothing was lost: the window starts where the last delivered one ended, before the failed digest's.
    expect(result.window.start).toEqual(new Date("2026-11-04T08:00:00Z"));
    expect(result.counts.faves).toBe(5);
    const mail = smtp.received[before];
    expect(smtp.received).toHaveLength(before + 1);
    expect(mail?.text).toContain("The smtp digest for 4 Nov, 08:00 – 5 Nov, 08:00 could not be delivered (2 attempts).");
    expect(mail?.text).toContain("this digest covers that period too");
    expect(await repo.lastWindowEnd("smtp")).toEqual(t2);
  });

  it("an empty window sends nothing unless DVAULT_DIGEST_SEND_EMPTY is set; the file channel writes one .html and one .txt", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "dvault-digest-files-"));
    try {
      const deliverer = fileDeliverer(dir);
      const quiet = new Date("2026-11-07T08:00:00Z");
      f.clock.now = quiet.getTime() + 1000;
      // The file channel's first digest: the previous tick starts its window; a day with no news.
      const empty = await runDigest(
        { channel: "file", tick: quiet.toISOString(), trigger: "cron" },
        { services: f.services, attempt: 1, maxAttempts: 6, deliverer },
      );
      expect(empty.status).toBe("empty");
      expect(await readdir(dir)).toEqual([]);
      expect(await repo.lastWindowEnd("file")).toEqual(quiet);

      const next = new Date(quiet.getTime() + DAY);
      f.clock.now = next.getTime() + 1000;
      const services = { ...f.services, config: { ...f.services.config, digest: { ...f.services.config.digest, sendEmpty: true } } };
      const sent = await runDigest({ channel: "file", tick: next.toISOString(), trigger: "cron" }, { services, attempt: 1, maxAttempts: 6, deliverer });
      expect(sent.status).toBe("sent");
      const files = (await readdir(dir)).sort();
      expect(files).toEqual(["dvault-digest-20261107T080000Z-20261108T080000Z.html", "dvault-digest-20261107T080000Z-20261108T080000Z.txt"]);
      expect(await readFile(path.join(dir, files[1]!), "utf8")).toContain("Nothing new in this window.");
      const rows = (await repo.listDigests(20)).filter((r) => r.channel === "file");
      expect(rows.map((r) => r.status)).toEqual(["sent", "empty"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
  it("a retry of a tick that a later digest already covered sends nothing; its row is closed as superseded", async () => {
    const a = new Date("2026-11-12T08:00:00Z");
    const b = new Date(a.getTime() + DAY);
    f.clock.now = a.getTime() + 5000;
    await f.addFaves(1, new Date(a.getTime() - 3_600_000));
    smtp.rejectNext(1);
    await expect(runDigest({ channel: "smtp", tick: a.toISOString(), trigger: "cron" }, { services: f.services, attempt: 1, maxAttempts: 6 })).rejects.toThrow(
      /451/,
    );
    f.clock.now = b.getTime() + 5000;
    const before = smtp.received.length;
    const later = await runDigest({ channel: "smtp", tick: b.toISOString(), trigger: "cron" }, { services: f.services, attempt: 1, maxAttempts: 6 });
    expect(later.status).toBe("sent");
    const retry = await runDigest({ channel: "smtp", tick: a.toISOString(), trigger: "cron" }, { services: f.services, attempt: 2, maxAttempts: 6 });
    expect(retry).toEqual({ status: "skipped", reason: `the smtp digest already covers ${a.toISOString()}` });
    expect(smtp.received).toHaveLength(before + 1);
    const older = (await repo.listDigests(20)).find((r) => r.channel === "smtp" && r.windowEnd.getTime() === a.getTime());
    expect(older).toMatchObject({ status: "failed", attempts: 1 });
    expect(older?.lastError).toMatch(/superseded: a later digest covered this window/);
  });
});
