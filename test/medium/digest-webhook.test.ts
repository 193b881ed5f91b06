// The webhook channel: a receiver (node:http, here) verifies the HMAC-SHA256 signature of the exact body
// with the shared secret, checks the timestamp, and recognises a retry by its idempotency key.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { verifyWebhookSignature } from "../../src/digest/deliver/webhook.ts";
import { DigestRepository } from "../../src/db/digest.repository.ts";
import { runDigest } from "../../src/digest/run-digest.ts";
import { scrubString } from "../../src/redact.ts";
import { createDigestFixture, type DigestFixture } from "../helpers/digest-fixture.ts";

const SECRET = "whsec-3f1c9a7be2d84c06a5e1";

type Delivery = { headers: IncomingHttpHeaders; body: Buffer; verified: boolean };

/** What a receiver does: HMAC the raw body with the secret and compare in constant time. */
function receiverVerifies(body: Buffer, header: string | undefined): boolean {
  const expected = Buffer.from(`sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`);
  const given = Buffer.from(header ?? "");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

describe("digest over a signed webhook", () => {
  let server: Server;
  let f: DigestFixture;
  const deliveries: Delivery[] = [];
  let failNext = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        const verified = receiverVerifies(body, req.headers["x-dvault-signature"] as string | undefined);
        deliveries.push({ headers: req.headers, body, verified });
        if (failNext > 0) {
          failNext--;
          res.writeHead(503).end("busy");
          return;
        }
        res.writeHead(verified ? 204 : 401).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  });
  // A fresh mirror per test, and the receiver's list of deliveries emptied: each test sends the digests it reads.
  beforeEach(async () => {
    deliveries.length = 0;
    failNext = 0;
    const port = (server.address() as AddressInfo).port;
    f = await createDigestFixture({
      DVAULT_DIGEST_CHANNELS: "webhook",
      DVAULT_WEBHOOK_URL: `http://127.0.0.1:${port}/hooks/catch/1234/k7Qw9xZpL2`,
      DVAULT_WEBHOOK_SECRET: SECRET,
    });
  });
  afterEach(async () => {
    await f?.close();
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  it("signs the body with HMAC-SHA256; the receiver verifies it, and a retry carries the same idempotency key", async () => {
    const tick = new Date("2026-11-03T08:00:00Z");
    await f.addFaves(3, new Date("2026-11-03T06:00:00Z"));
    failNext = 1;
    const payload = { channel: "webhook" as const, tick: tick.toISOString(), trigger: "cron" as const };
    const port = (server.address() as AddressInfo).port;
    await expect(runDigest(payload, { services: f.services, attempt: 1, maxAttempts: 6 })).rejects.toThrow(`webhook on 127.0.0.1:${port} answered 503: busy`);
    expect(await new DigestRepository(f.services.pool).lastWindowEnd("webhook")).toBeNull();
    // The receiver's address may be its only password (a path like Zapier's /hooks/catch/<id>/<key>): never recorded.
    const [failed] = await new DigestRepository(f.services.pool).listDigests(1);
    expect(failed?.lastError).toBe(`webhook on 127.0.0.1:${port} answered 503: busy`);
    const result = await runDigest(payload, { services: f.services, attempt: 2, maxAttempts: 6 });
    expect(result.status).toBe("sent");

    expect(deliveries).toHaveLength(2);
    const [first, second] = deliveries as [Delivery, Delivery];
    expect(first.verified && second.verified).toBe(true);
    expect(second.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(second.headers["x-dvault-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifyWebhookSignature(SECRET, second.body, second.headers["x-dvault-signature"] as string)).toBe(true);

    const key = "dvault-digest-webhook-20261102T080000Z-20261103T080000Z";
    expect(first.headers["x-dvault-idempotency-key"]).toBe(key);
    expect(second.headers["x-dvault-idempotency-key"]).toBe(key);
    const body = JSON.parse(second.body.toString("utf8")) as Record<string, unknown>;
    expect(body).toMatchObject({
      type: "dvault.digest",
      id: key,
      subject: "dvault digest 3 Nov: 3 faves",
      window: { start: "2026-11-02T08:00:00.000Z", end: "2026-11-03T08:00:00.000Z" },
      counts: { faves: 3, problems: 0 },
    });
    // The timestamp header is the signed body's sentAt, in seconds: a receiver can refuse stale replays.
    expect(Number(second.headers["x-dvault-timestamp"])).toBe(Math.floor(Date.parse(body.sentAt as string) / 1000));
    const digest = body.digest as { feedback: { faves: Array<{ people: number }> } };
    expect(digest.feedback.faves[0]?.people).toBe(3);
    expect(typeof body.text).toBe("string");
  });

  it("a receiver rejects a body that was changed on the way, and the secret never reaches a log line", async () => {
    await f.addFaves(3, new Date("2026-11-03T06:00:00Z"));
    const sent = await runDigest(
      { channel: "webhook", tick: "2026-11-03T08:00:00.000Z", trigger: "cron" },
      { services: f.services, attempt: 1, maxAttempts: 6 },
    );
    expect(sent.status).toBe("sent");
    const delivery = deliveries.at(-1) as Delivery;
    const tampered = Buffer.from(delivery.body.toString("utf8").replace('"faves":3', '"faves":30'));
    expect(receiverVerifies(tampered, delivery.headers["x-dvault-signature"] as string)).toBe(false);
    expect(verifyWebhookSignature(SECRET, tampered, delivery.headers["x-dvault-signature"] as string)).toBe(false);
    expect(verifyWebhookSignature("another-secret-of-some-length", delivery.body, delivery.headers["x-dvault-signature"] as string)).toBe(false);
    expect(scrubString(`posting with ${SECRET}`)).not.toContain(SECRET);
  });
});
