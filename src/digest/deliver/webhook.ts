// The webhook channel: a JSON POST signed with HMAC-SHA256 over the exact body bytes
// (X-Dvault-Signature: sha256=<hex>), with the send time in X-Dvault-Timestamp (also inside the signed
// body as sentAt, so a receiver can refuse stale or replayed deliveries) and the stable idempotency key
// in X-Dvault-Idempotency-Key (also the body's id), so a retried delivery is recognisable.
import { createHmac, timingSafeEqual } from "node:crypto";
import { registerSecret } from "../../redact.ts";
import type { WebhookConfig } from "../../config/digest.ts";
import type { Deliverer, DeliveryReceipt, OutgoingMessage } from "../types.ts";
import { postToChannel } from "./http-post.ts";

export const SIGNATURE_HEADER = "x-dvault-signature";
export const TIMESTAMP_HEADER = "x-dvault-timestamp";
export const IDEMPOTENCY_HEADER = "x-dvault-idempotency-key";

/** `sha256=<hex>` of the body under the secret: what receivers compute to verify a delivery. */
export function signWebhookBody(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** Constant-time check of a received signature header against the body. */
export function verifyWebhookSignature(secret: string, body: string | Buffer, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(signWebhookBody(secret, body));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export function webhookDeliverer(config: WebhookConfig, opts: { timeoutMs?: number; now?: () => number } = {}): Deliverer {
  registerSecret(config.secret);
  // A receiver's address may be its only password (Zapier's /hooks/catch/<id>/<key>, n8n's and Home Assistant's
  // webhook ids): errors, and so the log, the digests table and the job's failure in Redis, name its host alone.
  registerSecret(config.url);
  const receiver = `webhook on ${new URL(config.url).host}`;
  const now = opts.now ?? Date.now;
  return {
    channel: "webhook",
    async deliver(message: OutgoingMessage): Promise<DeliveryReceipt> {
      const sentAt = new Date(now());
      const body = JSON.stringify({
        type: message.kind === "digest" ? "dvault.digest" : "dvault.alert",
        id: message.idempotencyKey,
        sentAt: sentAt.toISOString(),
        subject: message.subject,
        ...message.payload,
        text: message.text,
      });
      const answer = await postToChannel({
        channel: "webhook",
        url: config.url,
        receiver,
        headers: {
          "user-agent": "dvault-webhook/1",
          [SIGNATURE_HEADER]: signWebhookBody(config.secret, body),
          [TIMESTAMP_HEADER]: String(Math.floor(sentAt.getTime() / 1000)),
          [IDEMPOTENCY_HEADER]: message.idempotencyKey,
        },
        body,
        ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
        now,
      });
      return { status: answer.status, bytes: Buffer.byteLength(body) };
    },
  };
}
