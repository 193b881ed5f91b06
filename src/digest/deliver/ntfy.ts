// The ntfy channel: one push notification per digest or alert, published in ntfy's JSON form (a POST to
// the server's root naming the topic), which carries titles and bodies in any script; the header form
// (X-Title...) only carries Latin-1. Alerts are sent at high priority so phones ring, digests at the
// default one; a tap opens the dashboard when DVAULT_PUBLIC_URL says where it is.
import { registerSecret } from "../../redact.ts";
import type { NtfyConfig } from "../../config/digest.ts";
import type { Deliverer, DeliveryReceipt, OutgoingMessage } from "../types.ts";
import { postToChannel } from "./http-post.ts";

/** ntfy's default message-size-limit is 4096 bytes; longer bodies become attachments or are refused. */
export const NTFY_MAX_BODY_BYTES = 4000;

/** ntfy's priorities: 3 is the default, 4 "high" (a sound and a pop-over on Android). */
const PRIORITY = { digest: 3, alert: 4 } as const;

/** The server's root and the topic of a topic URL (https://ntfy.example.org/base/topic). */
export function ntfyEndpoint(topicUrl: string): { server: string; topic: string } {
  const url = new URL(topicUrl);
  const parts = url.pathname.replace(/\/+$/, "").split("/");
  const topic = parts.pop() ?? "";
  url.pathname = `${parts.join("/")}/`;
  url.search = "";
  url.hash = "";
  return { server: url.toString(), topic };
}

/** The text cut at a line boundary to fit `maxBytes` of UTF-8, saying where the rest is when cut. */
export function fitText(text: string, maxBytes: number, more: string): string {
  const trimmed = text.trimEnd();
  if (Buffer.byteLength(trimmed) <= maxBytes) return trimmed;
  const budget = maxBytes - Buffer.byteLength(`\n${more}`);
  const kept: string[] = [];
  let used = 0;
  for (const line of trimmed.split("\n")) {
    const size = Buffer.byteLength(line) + 1;
    if (used + size > budget) break;
    kept.push(line);
    used += size;
  }
  return `${kept.join("\n")}\n${more}`;
}

/** The ntfy JSON body for a message (exported for the README's example and the tests). */
export function ntfyBody(message: OutgoingMessage, topic: string, publicUrl: string | undefined): Record<string, unknown> {
  // An alert's text starts with its subject, which is already the notification's title.
  const [first, ...rest] = message.text.split("\n");
  const body = first === message.subject ? rest.join("\n").trimStart() : message.text;
  const tags = message.kind === "alert" ? ["warning", "dvault", ...(message.alert ? [message.alert.kind] : [])] : ["inbox_tray", "dvault"];
  return {
    topic,
    title: message.subject,
    // A cut body still ends with the message's key, as the whole text does: a duplicate stays recognisable.
    message: fitText(
      body,
      NTFY_MAX_BODY_BYTES,
      `${publicUrl ? "… the rest is in the dashboard." : "… the rest is in the file or mail digest."}\n${message.kind === "digest" ? "Digest" : "Alert"} ${message.idempotencyKey}`,
    ),
    priority: PRIORITY[message.kind],
    tags,
    ...(publicUrl ? { click: `${publicUrl}/` } : {}),
  };
}

export function ntfyDeliverer(config: NtfyConfig, opts: { publicUrl?: string | undefined; timeoutMs?: number; now?: () => number } = {}): Deliverer {
  registerSecret(config.token);
  const { server, topic } = ntfyEndpoint(config.url);
  return {
    channel: "ntfy",
    async deliver(message: OutgoingMessage): Promise<DeliveryReceipt> {
      const body = JSON.stringify(ntfyBody(message, topic, opts.publicUrl));
      const answer = await postToChannel({
        channel: "ntfy",
        url: server,
        // The topic is the only password of a public ntfy.sh topic: errors name the server, not the topic.
        receiver: `ntfy server ${new URL(server).host}`,
        headers: { "user-agent": "dvault-ntfy/1", ...(config.token ? { authorization: `Bearer ${config.token}` } : {}) },
        body,
        ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
        ...(opts.now ? { now: opts.now } : {}),
      });
      return { ...answer };
    },
  };
}
