// The ntfy and Discord channels against local stand-ins of both services (test/helpers/channel-stand-ins.ts):
// one notification per digest or alert with what each service expects, delivered once however many
// workers run the digest at the same time, a refused attempt retried with the same content, and Discord's
// 429 waited out in the queue for its retry_after without spending an attempt.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DIGEST_JOB } from "../../jobs/digest/definition.ts";
import { DigestRepository } from "../../src/db/digest.repository.ts";
import { evaluateAlerts, storedDownloadsPausedProbe } from "../../src/digest/alerts.ts";
import { createDeliverers } from "../../src/digest/deliver/index.ts";
import { DigestBusyError, runDigest, type DigestJobPayload } from "../../src/digest/run-digest.ts";
import { createLogger } from "../../src/log.ts";
import { scrubString } from "../../src/redact.ts";
import { discordProblems, startDiscordStandIn, startNtfyStandIn, type Received, type StandIn } from "../helpers/channel-stand-ins.ts";
import { createDigestFixture, digestWorker, type DigestFixture } from "../helpers/digest-fixture.ts";
import { queueOf } from "../helpers/producer-queue.ts";
import { downloadsPausedKey } from "../../src/coord/downloads-pause.ts";
import { TEST_ENGINE } from "../helpers/env.ts";

const log = createLogger({ level: "silent" });
const POLL = { timeout: 20_000, interval: 50 };
const WEBHOOK = { id: "1234567890123", token: "dIsCoRd-ToKeN_0123456789abcdefXYZ" };
const NTFY_TOKEN = "tk_standin0123456789abcdefghij";
const PUBLIC_URL = "https://dvault.example.org";
const TICK = new Date("2026-11-03T08:00:00Z");

type NtfyBody = { topic: string; title: string; message: string; priority: number; tags: string[]; click?: string };
type DiscordBody = {
  username: string;
  content?: string;
  allowed_mentions: { parse: string[] };
  embeds?: Array<{ title: string; url?: string; description: string; fields: Array<{ name: string; value: string }>; footer: { text: string } }>;
};

/** What the service took: a stand-in also records the requests it refused. */
const accepted = (s: StandIn) => s.received.filter((r) => r.status < 300);

describe("digests and alerts over ntfy and Discord", () => {
  let ntfy: StandIn;
  let discord: StandIn;
  let f: DigestFixture;
  let repo: DigestRepository;

  beforeEach(async () => {
    ntfy = await startNtfyStandIn({ token: NTFY_TOKEN });
    discord = await startDiscordStandIn(WEBHOOK);
    f = await createDigestFixture({
      DVAULT_DIGEST_CHANNELS: "ntfy,discord",
      DVAULT_NTFY_URL: `${ntfy.url}/dvault-me`,
      DVAULT_NTFY_TOKEN: NTFY_TOKEN,
      DVAULT_DISCORD_WEBHOOK_URL: `${discord.url}/api/webhooks/${WEBHOOK.id}/${WEBHOOK.token}`,
      DVAULT_PUBLIC_URL: PUBLIC_URL,
    });
    repo = new DigestRepository(f.services.pool);
  });
  afterEach(async () => {
    await f?.close();
    await ntfy?.close();
    await discord?.close();
  });

  const payload = (channel: "ntfy" | "discord", trigger: DigestJobPayload["trigger"] = "cron"): DigestJobPayload => ({
    channel,
    tick: TICK.toISOString(),
    trigger,
  });

  it("sends one ntfy notification and one Discord embed per digest, each as its service expects", async () => {
    await f.addFaves(3, new Date("2026-11-03T06:00:00Z"));
    for (const channel of ["ntfy", "discord"] as const) {
      expect((await runDigest(payload(channel), { services: f.services, attempt: 1, maxAttempts: 6 })).status).toBe("sent");
    }

    expect(ntfy.received).toHaveLength(1);
    const n = ntfy.received[0] as Received;
    expect(n.headers.authorization).toBe(`Bearer ${NTFY_TOKEN}`);
    expect(n.headers["content-type"]).toBe("application/json; charset=utf-8");
    const nb = n.body as NtfyBody;
    expect(nb).toMatchObject({ topic: "dvault-me", title: "dvault digest 3 Nov: 3 faves", priority: 3, click: `${PUBLIC_URL}/` });
    expect(nb.tags).toContain("inbox_tray");
    expect(nb.message).toContain("3 people faved");
    expect(nb.message).toContain("dvault-digest-ntfy-20261102T080000Z-20261103T080000Z");

    expect(discord.received).toHaveLength(1);
    const d = discord.received[0] as Received;
    expect(d.path).toBe(`/api/webhooks/${WEBHOOK.id}/${WEBHOOK.token}?wait=true`);
    expect(discordProblems(d.body)).toEqual([]);
    const db = d.body as DiscordBody;
    expect(db.allowed_mentions).toEqual({ parse: [] });
    expect(db.embeds).toHaveLength(1);
    const embed = db.embeds?.[0];
    expect(embed).toMatchObject({ title: "dvault digest 3 Nov: 3 faves", url: `${PUBLIC_URL}/` });
    expect(embed?.fields).toContainEqual({ name: "Faves", value: "3", inline: true });
    expect(embed?.description).toContain(": 3 faves");
    expect(embed?.footer.text).toBe("Digest dvault-digest-discord-20261102T080000Z-20261103T080000Z");

    // Each digest row keeps the id the service gave its message.
    const rows = await repo.listDigests(5);
    expect(rows.find((r) => r.channel === "ntfy")?.delivery).toMatchObject({ status: 200, id: expect.stringMatching(/^ntfy\d+$/) });
    expect(rows.find((r) => r.channel === "discord")?.delivery).toMatchObject({ status: 200, id: expect.stringMatching(/^\d+$/) });
    // The webhook's token and the ntfy token are secrets in any text that may reach a log.
    const line = scrubString(`posting to ${f.services.config.digest.discord?.webhookUrl} with Bearer ${NTFY_TOKEN}`);
    expect(line).not.toContain(WEBHOOK.token);
    expect(line).not.toContain(NTFY_TOKEN);
  });

  it("two workers running the same digest at once, and a manual send beside them, deliver it once per channel", async () => {
    await f.addFaves(2, new Date("2026-11-03T06:00:00Z"));
    const workers = [digestWorker(f), digestWorker(f)];
    try {
      for (const w of workers) w.host.start();
      // Each worker's cron enqueues the tick for both channels; a short backoff so a lost race retries fast.
      const jobs = await Promise.all(
        workers.flatMap((w) =>
          (["ntfy", "discord"] as const).map((channel) =>
            queueOf(w.producer, "digest").add(DIGEST_JOB, payload(channel), {
              ...w.producer.optionsFor(DIGEST_JOB, payload(channel)),
              backoff: { type: "fixed", delay: 100 },
            }),
          ),
        ),
      );
      // `dvault digest --send` from a shell at the same moment: it sends, finds the window covered, or finds it busy.
      const manual = await Promise.allSettled(
        (["ntfy", "discord"] as const).map((channel) => runDigest(payload(channel, "manual"), { services: f.services, attempt: 1, maxAttempts: 6 })),
      );
      for (const m of manual) if (m.status === "rejected") expect(m.reason).toBeInstanceOf(DigestBusyError);
      const states = () => Promise.all(jobs.map(async (j) => (await (workers[0] && queueOf(workers[0].producer, "digest"))?.getJob(j.id ?? ""))?.getState()));
      await expect.poll(states, { ...POLL, message: "every digest job to finish" }).toEqual(jobs.map(() => "completed"));
    } finally {
      await Promise.all(workers.map((w) => w.close()));
    }
    expect(accepted(ntfy)).toHaveLength(1);
    expect(accepted(discord)).toHaveLength(1);
    expect(ntfy.received).toHaveLength(1);
    expect(discord.received).toHaveLength(1);
    expect((discord.received[0]?.body as DiscordBody | undefined)?.embeds?.[0]?.title).toBe("dvault digest 3 Nov: 2 faves");
    expect(await repo.lastWindowEnd("ntfy")).toEqual(TICK);
    expect(await repo.lastWindowEnd("discord")).toEqual(TICK);
  });

  it("a delivery refused with a 500 is retried and delivered once, with the same content", async () => {
    await f.addFaves(1, new Date("2026-11-03T06:00:00Z"));
    ntfy.answerNext({ status: 500, body: { code: 50001, http: 500, error: "internal server error" } });
    discord.answerNext({ status: 500, body: { message: "500: Internal Server Error", code: 0 } });
    for (const channel of ["ntfy", "discord"] as const) {
      await expect(runDigest(payload(channel), { services: f.services, attempt: 1, maxAttempts: 6 })).rejects.toThrow(/answered 500/);
      expect(await repo.lastWindowEnd(channel)).toBeNull();
      expect((await runDigest(payload(channel), { services: f.services, attempt: 2, maxAttempts: 6 })).status).toBe("sent");
      expect(await repo.lastWindowEnd(channel)).toEqual(TICK);
    }
    for (const s of [ntfy, discord]) {
      expect(s.received.map((r) => r.status)).toEqual([500, 200]);
      expect(accepted(s)).toHaveLength(1);
      // The same digest both times; only the disk's free space is read afresh by each attempt.
      const steady = (raw: string | undefined) => raw?.replace(/[\d.]+ [KMGT]?i?B free/g, "… free");
      expect(steady(s.received[1]?.raw)).toBe(steady(s.received[0]?.raw));
    }
    const rows = await repo.listDigests(5);
    for (const channel of ["ntfy", "discord"]) expect(rows.filter((r) => r.channel === channel)).toMatchObject([{ status: "sent", attempts: 2 }]);
    // The first failure was recorded without the webhook's token.
    expect(JSON.stringify(rows)).not.toContain(WEBHOOK.token);
  });

  it("waits out Discord's 429 for its retry_after in the queue, without spending an attempt, then delivers once", async () => {
    await f.addFaves(2, new Date("2026-11-03T06:00:00Z"));
    const now = Date.now();
    const worker = digestWorker(f, { now: () => now });
    try {
      discord.answerNext({
        status: 429,
        body: { message: "You are being rate limited.", retry_after: 42.5, global: false },
        headers: { "retry-after": "43" },
      });
      const queue = queueOf(worker.producer, "digest");
      const job = await queue.add(DIGEST_JOB, payload("discord"), worker.producer.optionsFor(DIGEST_JOB, payload("discord")));
      worker.host.start();
      await expect.poll(() => job.getState(), { ...POLL, message: "the job to wait in delayed" }).toBe("delayed");
      // On Redis, BullMQ keeps a delayed job scored by its due time (ms × 4096 + a counter): due at now + retry_after.
      // PostgreSQL alone's backend keeps no such score to read.
      if (TEST_ENGINE === "redis") {
        const score = Number(await f.services.redis.zscore(queue.keys.delayed ?? "", job.id ?? ""));
        expect(Math.floor(score / 4096)).toBe(now + 42_500);
      }
      const waiting = await queue.getJob(job.id ?? "");
      expect(waiting?.attemptsMade).toBe(0);
      expect((await repo.listDigests(1))[0]).toMatchObject({ status: "pending" });
      expect(discord.received).toHaveLength(1);

      // Its time has come (promoted here rather than waited for).
      await waiting?.promote();
      await expect.poll(() => job.getState(), { ...POLL, message: "the job to complete" }).toBe("completed");
    } finally {
      await worker.close();
    }
    expect(discord.received.map((r) => r.status)).toEqual([429, 200]);
    expect(accepted(discord)).toHaveLength(1);
    expect(discordProblems(discord.received[1]?.body)).toEqual([]);
    expect((await repo.listDigests(1))[0]).toMatchObject({ status: "sent" });
    expect(await repo.lastWindowEnd("discord")).toEqual(TICK);
  });

  it("sends an alert to ntfy at high priority and to Discord as a short message", async () => {
    const prefix = f.services.config.redisPrefix;
    await f.services.coord.put(downloadsPausedKey(prefix), JSON.stringify({ reason: "2.1 GiB free", since: "2026-11-03T07:55:00Z" }));
    const result = await evaluateAlerts({
      db: f.services.pool,
      coord: f.services.coord,
      prefix,
      now: new Date(f.clock.now),
      downloadsPaused: storedDownloadsPausedProbe(f.services.coord, prefix),
      deliverers: createDeliverers(f.services.config.digest),
      timezone: "UTC",
      log,
    });
    expect(result.notified).toHaveLength(1);

    expect(ntfy.received).toHaveLength(1);
    const nb = ntfy.received[0]?.body as NtfyBody;
    expect(nb.priority).toBe(4);
    expect(nb.tags).toEqual(["warning", "dvault", "downloads_paused"]);
    expect(nb.title).toMatch(/^dvault alert: /);
    expect(nb.message).toContain("Downloads are paused because the archive's disk is almost full (2.1 GiB free)");
    expect(nb.message.startsWith(nb.title)).toBe(false);

    expect(discord.received).toHaveLength(1);
    const db = discord.received[0]?.body as DiscordBody;
    expect(discordProblems(db)).toEqual([]);
    expect(db.embeds).toBeUndefined();
    expect(db.content).toMatch(/^\*\*dvault alert: /);
    expect(db.content).toContain(`<${PUBLIC_URL}/>`);
    expect(db.allowed_mentions).toEqual({ parse: [] });
  });
});
