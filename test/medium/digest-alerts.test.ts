// Immediate alerts: an account forced into needs_reauth by a dead refresh token (many sync jobs hit it)
// produces one alert, however many evaluators run; a reminder at most daily; resolved incidents close.
// Downloads paused for disk space, a source failing for a while and a worker that vanished are alerts too.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { JOBS, JOB_DEFINITIONS } from "../../jobs/index.ts";
import type { WorkerContext } from "../../jobs/context.ts";
import { AlertRepository } from "../../src/db/alert.repository.ts";
import { evaluateAlerts, forgetWorker, OWED_SENDS, storedDownloadsPausedProbe } from "../../src/digest/alerts.ts";
import { createDeliverers } from "../../src/digest/deliver/index.ts";
import { smtpDeliverer } from "../../src/digest/deliver/smtp.ts";
import { ALERTS_JOB } from "../../jobs/alerts/definition.ts";
import { alertsHandler } from "../../jobs/alerts/handler.ts";
import { SyncStateRepository } from "../../src/db/sync-state.repository.ts";
import { createLogger } from "../../src/log.ts";
import { checkCatalogue } from "../../src/queue/job-definition.ts";
import { Producer } from "../../src/queue/producer.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { createServices, type Services } from "../../src/services.ts";
import { syncSourceDefinition } from "../../jobs/sync-source/definition.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import { testConfig } from "../helpers/config.ts";
import { createDigestFixture, type DigestFixture } from "../helpers/digest-fixture.ts";
import { startTestSmtp, type TestSmtp } from "../helpers/digest-mail.ts";
import { storeOwnerGrant } from "../helpers/owner-grant.ts";
import { createSyncHarness, SIM_CLIENT_ID, SIM_CLIENT_SECRET, type SyncHarness } from "../helpers/sync-harness.ts";
import { queueOf } from "../helpers/producer-queue.ts";
import { workerContext } from "../helpers/worker-context.ts";
import { downloadsPausedKey } from "../../src/coord/downloads-pause.ts";
import type { Deliverer } from "../../src/digest/types.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const log = createLogger({ level: "silent" });

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  await expect.poll(probe, { timeout: timeoutMs, interval: 50, message: `waiting for ${what}` }).toBe(true);
}

describe("an account forced into needs_reauth", () => {
  let h: SyncHarness;
  let smtp: TestSmtp;
  let services: Services;
  let producer: Producer;
  let host: WorkerHost<WorkerContext>;

  beforeAll(async () => {
    h = await createSyncHarness({
      sim: {
        dataset: { deviations: 12, favourites: 4, notes: 4, messages: 8, feedItems: 4, watchers: 4, friends: 4, trackedUsers: 1, trackedUserDeviations: 3 },
      },
    });
    smtp = await startTestSmtp();
    const config = testConfig({
      DATABASE_URL: h.db.url,
      DVAULT_REDIS_PREFIX: h.redis.prefix,
      DVAULT_DIGEST_CHANNELS: "smtp",
      DVAULT_SMTP_HOST: "127.0.0.1",
      DVAULT_SMTP_PORT: String(smtp.port),
      DVAULT_SMTP_FROM: "dvault <dvault@example.org>",
      DVAULT_SMTP_TO: "me@example.org",
    });
    services = await createServices({ config, log, overrides: { now: () => h.sim.clock.now().getTime() } });
    producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
    // Sync jobs run with the harness's services (they hold the account's tokens); the alerts job with the digest config.
    host = new WorkerHost<WorkerContext>({
      entries: checkCatalogue<WorkerContext>(JOBS),
      backend: h.services.queues,
      log,
      queues: ["sync", "maintenance"],
      concurrency: { sync: 4 },
      makeContext: (base, job) => ({
        ...base,
        services: job.name === ALERTS_JOB ? services : h.services,
        sources: new Map(SOURCES.map((s) => [s.name, s])),
        producer,
        everyMs: {},
      }),
    });
    host.start();
  }, 120_000);

  afterAll(async () => {
    await host?.close();
    await producer?.close();
    await services?.close();
    await smtp?.close();
    await h?.close();
  });

  const evaluate = () =>
    evaluateAlerts({
      db: services.pool,
      coord: services.coord,
      prefix: services.config.redisPrefix,
      now: new Date(services.now()),
      deliverers: createDeliverers(services.config.digest),
      timezone: "UTC",
      messageDomain: "example.org",
      log,
    });

  // The reminder and the closing follow the first alert of the same incident, so the whole incident is one test.
  it("a dead refresh token, hit by many sync jobs, produces one alert with the command to run, reminds at most daily, and closes", async () => {
    // Step 1: one alert with the command to run.
    // Another machine spends the refresh token behind dvault's back; the access token then expires.
    const issued = h.sim.issueUserToken({ userId: h.account.userId });
    await storeOwnerGrant(h.services, h.sim, issued);
    const spent = await fetch(`${h.sim.url}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: issued.refresh_token,
        client_id: SIM_CLIENT_ID,
        client_secret: SIM_CLIENT_SECRET,
      }),
    });
    expect(spent.status).toBe(200);
    h.sim.clock.advance(2 * HOUR);

    const queue = queueOf(producer, "sync");
    const jobs = await Promise.all(
      (["messages", "notes", "profile", "watch_feed", "collections", "gallery"] as const).map((source) =>
        queue.add(syncSourceDefinition.name, { accountId: h.account.id, source, key: "" }, { jobId: `t-${source}`, attempts: 1 }),
      ),
    );
    await until("the sync jobs to finish", async () => (await Promise.all(jobs.map((j) => j.getState()))).every((s) => s === "completed" || s === "failed"));
    const row = await h.services.accounts.findById(h.account.id);
    expect(row?.state).toBe("needs_reauth");

    // Several evaluators at once (workers, the CLI), and the alerts job itself.
    await Promise.all([evaluate(), evaluate(), evaluate()]);
    await queueOf(producer, "maintenance").add(ALERTS_JOB, {}, { jobId: "t-alerts-1" });
    await until("the alerts job", async () => (await queueOf(producer, "maintenance").getJob("t-alerts-1"))?.finishedOn !== undefined);
    await evaluate();

    expect(smtp.received).toHaveLength(1);
    const [mail] = smtp.received;
    expect(mail?.subject).toBe(`dvault alert: account “${h.account.name}” needs re-authorization`);
    expect(mail?.text).toContain(`Run: dvault auth login --account ${h.account.name}`);
    expect(mail?.html).toContain(`>dvault auth login --account ${h.account.name}</code>`);
    expect(mail?.text).toMatch(/rejected its refresh token|refresh_token is invalid/i);
    expect(mail?.headers.get("x-dvault-kind")).toBe("alert");
    const repo = new AlertRepository(services.pool);
    const open = await repo.listOpen();
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({ kind: "needs_reauth", subject: `account:${h.account.id}`, notifyCount: 1 });
    const sent = await repo.listDeliveries();
    expect(sent).toHaveLength(1);
    expect(sent[0]?.results.smtp?.ok).toBe(true);

    // Step 2: a reminder at most once a day while it lasts, and the incident closes once the account is back.
    h.sim.clock.advance(23 * HOUR);
    await evaluate();
    expect(smtp.received).toHaveLength(1);
    h.sim.clock.advance(HOUR + MINUTE);
    await Promise.all([evaluate(), evaluate()]);
    expect(smtp.received).toHaveLength(2);
    expect(smtp.received[1]?.subject).toBe(`dvault reminder: account “${h.account.name}” needs re-authorization`);
    expect(smtp.received[1]?.messageId).not.toBe(smtp.received[0]?.messageId);

    // The owner logs in again.
    await storeOwnerGrant(h.services, h.sim);
    const result = await evaluate();
    expect(result.resolved).toEqual([`account “${h.account.name}” needs re-authorization`]);
    expect(await new AlertRepository(services.pool).listOpen()).toEqual([]);
    h.sim.clock.advance(2 * 24 * HOUR);
    await evaluate();
    expect(smtp.received).toHaveLength(2);
  }, 120_000);
});

describe("other alert conditions", () => {
  let smtp: TestSmtp;
  let f: DigestFixture;
  const evaluate = (graceOverride?: number) =>
    evaluateAlerts({
      db: f.services.pool,
      coord: f.services.coord,
      prefix: f.services.config.redisPrefix,
      now: new Date(f.clock.now),
      downloadsPaused: storedDownloadsPausedProbe(f.services.coord, f.services.config.redisPrefix),
      deliverers: createDeliverers(f.services.config.digest),
      timezone: "UTC",
      log,
      ...(graceOverride !== undefined ? { graceMs: { source_failing: graceOverride } } : {}),
    });

  // A fresh database, Redis prefix and mail box per test: each test raises incidents and counts alert mails.
  beforeEach(async () => {
    smtp = await startTestSmtp();
    f = await createDigestFixture({ DVAULT_DIGEST_CHANNELS: "smtp", DVAULT_SMTP_HOST: "127.0.0.1", DVAULT_SMTP_PORT: String(smtp.port) });
  });
  afterEach(async () => {
    await f?.close();
    await smtp?.close();
  });

  it("downloads paused for disk space: one alert while the flag is set, resolved when it is cleared", async () => {
    const key = downloadsPausedKey(f.services.config.redisPrefix);
    await f.services.coord.put(key, JSON.stringify({ reason: "1.2 GiB free on /archive, below DVAULT_MIN_FREE_BYTES (2 GiB)", since: "2026-11-03T07:55:00Z" }));
    await evaluate();
    await evaluate();
    expect(smtp.received).toHaveLength(1);
    expect(smtp.received[0]?.subject).toBe("dvault alert: downloads are paused: the archive's disk is almost full");
    expect(smtp.received[0]?.text).toContain("1.2 GiB free on /archive");
    await f.services.coord.remove(key);
    expect((await evaluate()).resolved).toEqual(["downloads are paused: the archive's disk is almost full"]);
  });

  it("a source failing for more than 30 minutes: one alert after the grace, not before", async () => {
    const before = smtp.received.length;
    await new SyncStateRepository(f.services.pool).saveSourceState(
      { accountId: f.accountId, source: "gallery" },
      { lastResult: "failed", lastError: "HTTP 502 from /gallery/all", lastRunAt: new Date(f.clock.now) },
    );
    await evaluate();
    expect(smtp.received).toHaveLength(before);
    f.clock.now += 31 * MINUTE;
    await evaluate();
    await evaluate();
    expect(smtp.received).toHaveLength(before + 1);
    expect(smtp.received.at(-1)?.subject).toBe("dvault alert: me: gallery keeps failing");
    expect(smtp.received.at(-1)?.text).toContain("HTTP 502 from /gallery/all");
    await new SyncStateRepository(f.services.pool).saveSourceState({ accountId: f.accountId, source: "gallery" }, { lastResult: "ok", lastError: null });
    expect((await evaluate()).resolved).toEqual(["me: gallery keeps failing"]);
  });

  it("a worker whose heartbeat vanished without a graceful stop is reported by the next process alive", async () => {
    const prefix = f.services.config.redisPrefix;
    const coord = f.services.coord;
    const beat = { ttlMs: 60_000 };
    const before = smtp.received.length;
    await coord.put(`${prefix}:heartbeat:nas:4242`, "{}", beat);
    await coord.put(`${prefix}:heartbeat:laptop:77`, "{}", beat);
    await evaluate(); // both seen alive
    expect(smtp.received).toHaveLength(before);
    // The laptop worker stops gracefully; the NAS worker is killed (its key expires).
    await forgetWorker(f.services.coord, prefix, "laptop:77");
    await coord.remove(`${prefix}:heartbeat:laptop:77`, `${prefix}:heartbeat:nas:4242`);
    f.clock.now += 2 * MINUTE;
    await evaluate();
    await evaluate();
    expect(smtp.received).toHaveLength(before + 1);
    expect(smtp.received.at(-1)?.subject).toBe("dvault alert: the dvault worker nas:4242 stopped without shutting down");
    // It comes back (a new pid on the same machine): resolved.
    await coord.put(`${prefix}:heartbeat:nas:5150`, "{}", beat);
    expect((await evaluate()).resolved).toEqual(["the dvault worker nas:4242 stopped without shutting down"]);
    expect(smtp.received).toHaveLength(before + 1);
  });

  it("the worker evaluating is alive after its heartbeat expired while its machine slept: no alert about itself", async () => {
    const prefix = f.services.config.redisPrefix;
    const coord = f.services.coord;
    const before = smtp.received.length;
    const self = "nas:4242";
    await coord.put(`${prefix}:heartbeat:${self}`, "{}", { ttlMs: 60_000 });
    const producer = new Producer([...JOB_DEFINITIONS], f.services.queues);
    try {
      // The alerts job as the worker runs it, in the worker `nas:4242`.
      const ctx = { ...workerContext({ services: f.services, producer, log }), workerId: self };
      await alertsHandler({}, ctx);
      // Asleep for two hours: the key expired; on waking the alerts job runs before the worker's next beat.
      await coord.remove(`${prefix}:heartbeat:${self}`);
      f.clock.now += 2 * HOUR;
      expect(await alertsHandler({}, ctx)).toMatchObject({ open: 0, notified: [] });
      expect(smtp.received).toHaveLength(before);
      // Another process (`dvault digest --alerts`) sees it gone, as before.
      expect((await evaluate()).notified).toEqual([`the dvault worker ${self} stopped without shutting down`]);
    } finally {
      await producer.close();
    }
  });

  it("with no channel configured, incidents are still recorded (and shown in digests) but nothing is sent", async () => {
    const quiet = await evaluateAlerts({
      db: f.services.pool,
      coord: f.services.coord,
      prefix: f.services.config.redisPrefix,
      now: new Date(f.clock.now),
      downloadsPaused: async () => ({ paused: true, reason: "disk full" }),
      deliverers: [],
      timezone: "UTC",
      log,
    });
    expect(quiet.notified).toEqual(["downloads are paused: the archive's disk is almost full"]);
    const [delivery] = await new AlertRepository(f.services.pool).listDeliveries(1);
    expect(delivery?.results).toEqual({});
  });
});

describe("an alert one channel could not take while another did", () => {
  let smtp: TestSmtp;
  let f: DigestFixture;
  let dir: string;

  beforeEach(async () => {
    smtp = await startTestSmtp();
    dir = await mkdtemp(path.join(os.tmpdir(), "dvault-alert-files-"));
    f = await createDigestFixture({
      DVAULT_DIGEST_CHANNELS: "smtp,file",
      DVAULT_DIGEST_DIR: dir,
      DVAULT_SMTP_HOST: "127.0.0.1",
      DVAULT_SMTP_PORT: String(smtp.port),
    });
  });
  afterEach(async () => {
    await f?.close();
    await smtp?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The alerts' evaluation now, with the downloads paused for disk space (one incident), through `deliverers`. */
  const evaluateWith = (deliverers: Deliverer[], logger = log) =>
    evaluateAlerts({
      db: f.services.pool,
      coord: f.services.coord,
      prefix: f.services.config.redisPrefix,
      now: new Date(f.clock.now),
      downloadsPaused: async () => ({ paused: true, reason: "1.2 GiB free on /archive" }),
      deliverers,
      timezone: "UTC",
      messageDomain: "example.org",
      log: logger,
    });

  it("a recipient the mail server defers (450) while another gets it is sent it alone at the next evaluation", async () => {
    const smtpOnly = smtpDeliverer({ ...f.services.config.digest.smtp!, to: ["me@example.org", "new@example.org"] });
    smtp.deferRecipient("new@example.org", 1);
    // Taken (me got it), owing new alone.
    expect((await evaluateWith([smtpOnly])).notified).toHaveLength(1);
    f.clock.now += MINUTE;
    expect((await evaluateWith([smtpOnly])).notified).toHaveLength(1);
    f.clock.now += MINUTE;
    await evaluateWith([smtpOnly]);
    expect(smtp.received.map((m) => m.to)).toEqual([["me@example.org"], ["new@example.org"]]);
    expect(smtp.received[1]?.messageId).toBe(smtp.received[0]?.messageId);
  });

  it("a recipient whose server defers at every send (a full mailbox) while another gets it: taken, and the deferred one is sent it a bounded number of times", async () => {
    const smtpOnly = smtpDeliverer({ ...f.services.config.digest.smtp!, to: ["me@example.org", "full@example.org"] });
    smtp.deferRecipient("full@example.org", 1000);
    const outcomes: Array<Awaited<ReturnType<typeof evaluateWith>>> = [];
    // Two hours of evaluations a minute apart: the first is a sent alert, not a failure, and none fails after it.
    for (let i = 0; i < 120; i++) {
      outcomes.push(await evaluateWith([smtpOnly]));
      f.clock.now += MINUTE;
    }
    expect(outcomes[0]?.notified).toHaveLength(1);
    expect(outcomes.flatMap((o) => o.failed)).toEqual([]);
    expect(smtp.received.map((m) => m.to)).toEqual([["me@example.org"]]);
    // The first send and the resends to full alone, then nothing more until the reminder: one row each.
    const rows = await new AlertRepository(f.services.pool).listDeliveries(200);
    expect(rows).toHaveLength(OWED_SENDS);
    expect(rows[0]?.results.smtp).toMatchObject({ ok: true, deferred: ["full@example.org"] });
  });

  it("a channel that fails for good beside one that takes the alert is sent it a bounded number of times, then again by the daily reminder", async () => {
    const tried = { smtp: 0, file: 0 } as Record<string, number>;
    const deliverers: Deliverer[] = createDeliverers(f.services.config.digest).map((d) => ({
      channel: d.channel,
      deliver: async (m) => {
        tried[d.channel] = (tried[d.channel] ?? 0) + 1;
        return d.deliver(m);
      },
    }));
    smtp.rejectNext(1000);
    // Two hours of evaluations a minute apart.
    for (let i = 0; i < 120; i++) {
      await evaluateWith(deliverers);
      f.clock.now += MINUTE;
    }
    expect(tried).toEqual({ smtp: OWED_SENDS, file: 1 });
    expect(await new AlertRepository(f.services.pool).listDeliveries(200)).toHaveLength(OWED_SENDS);
    // The daily reminder tries every channel again.
    f.clock.now += 24 * HOUR;
    expect((await evaluateWith(deliverers)).reminded).toHaveLength(1);
    expect(tried).toEqual({ smtp: OWED_SENDS + 1, file: 2 });
  });

  it("is logged as sent only on the channels that took it", async () => {
    const lines: Array<{ msg: string; channels?: string[] }> = [];
    const heard = createLogger({ level: "info", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
    const evaluate = (deliverers: Deliverer[]) => evaluateWith(deliverers, heard);
    const all = createDeliverers(f.services.config.digest);
    smtp.rejectNext(2);
    // SMTP alone, refused: a warning, and no line saying it was sent.
    expect((await evaluate(all.filter((d) => d.channel === "smtp"))).failed).toHaveLength(1);
    expect(lines.map((l) => l.msg)).toEqual(["alert delivery failed"]);
    // Both channels, SMTP refused again: sent on the file channel alone.
    lines.length = 0;
    await evaluate(all);
    expect(lines.map((l) => [l.msg, l.channels])).toEqual([
      ["alert delivery failed", undefined],
      ["alert sent", ["file"]],
    ]);
  });

  it("is sent again on that channel alone at the next evaluation, with the same Message-ID, until it is taken", async () => {
    // The configured channels as the worker builds them, each send and each delivery counted; `during` runs while
    // the mail server has the message (another evaluator, in the middle of this one's send).
    const tried = { smtp: 0, file: 0 } as Record<string, number>;
    const sent = { smtp: 0, file: 0 } as Record<string, number>;
    let during: (() => Promise<unknown>) | undefined;
    const deliverers: Deliverer[] = createDeliverers(f.services.config.digest).map((d) => ({
      channel: d.channel,
      deliver: async (m) => {
        tried[d.channel] = (tried[d.channel] ?? 0) + 1;
        const meanwhile = during;
        during = undefined;
        await meanwhile?.();
        const receipt = await d.deliver(m);
        sent[d.channel] = (sent[d.channel] ?? 0) + 1;
        return receipt;
      },
    }));
    const evaluate = () => evaluateWith(deliverers);
    // A greylisting server: the first three tries are answered 451, try again later.
    smtp.rejectNext(3);
    await evaluate();
    expect(sent).toEqual({ smtp: 0, file: 1 });
    f.clock.now += MINUTE;
    await evaluate();
    expect([tried, sent]).toEqual([
      { smtp: 2, file: 1 },
      { smtp: 0, file: 1 },
    ]);
    // Refused again: the next try waits 5 minutes.
    f.clock.now += 4 * MINUTE;
    await evaluate();
    expect(tried).toEqual({ smtp: 2, file: 1 });
    // Two evaluators at once (two workers, or one and dvault digest --alerts): one of them tries.
    f.clock.now += MINUTE;
    await Promise.all([evaluate(), evaluate()]);
    expect(tried).toEqual({ smtp: 3, file: 1 });
    // Another evaluator runs while this one's send is under way: it leaves the channel to it.
    f.clock.now += 5 * MINUTE;
    during = () => evaluate();
    await evaluate();
    expect([tried, sent]).toEqual([
      { smtp: 4, file: 1 },
      { smtp: 1, file: 1 },
    ]);
    expect(smtp.received[0]?.subject).toBe("dvault alert: downloads are paused: the archive's disk is almost full");
    expect(smtp.received[0]?.messageId).toMatch(/^<dvault-alert-\d+-1@example\.org>$/);
    // Taken by both: nothing more until the daily reminder.
    f.clock.now += MINUTE;
    await evaluate();
    expect([tried, sent]).toEqual([
      { smtp: 4, file: 1 },
      { smtp: 1, file: 1 },
    ]);
    const [latest] = await new AlertRepository(f.services.pool).listDeliveries(1);
    expect(latest?.results.smtp?.ok).toBe(true);
  });
});
