// The Discord channel: one webhook message per digest or alert (src/digest/deliver/discord-message.ts lays
// it out). `?wait=true` makes Discord answer with the message it created, so the receipt holds its id. A
// 429 carries Discord's retry_after: the digest job waits that long in the queue (src/digest/deliver/http-post.ts).
import { registerSecret } from "../../redact.ts";
import { DISCORD_WEBHOOK_PATH, type DiscordConfig } from "../../config/digest.ts";
import type { Deliverer, DeliveryReceipt, OutgoingMessage } from "../types.ts";
import { discordMessage } from "./discord-message.ts";
import { postToChannel } from "./http-post.ts";

export function discordDeliverer(
  config: DiscordConfig,
  opts: { publicUrl?: string | undefined; timezone: string; timeoutMs?: number; now?: () => number },
): Deliverer {
  // Whoever has the URL can post to the channel: it is a secret as a whole and by its token.
  registerSecret(config.webhookUrl);
  const url = new URL(config.webhookUrl);
  registerSecret(DISCORD_WEBHOOK_PATH.exec(url.pathname)?.[2]);
  url.searchParams.set("wait", "true");
  return {
    channel: "discord",
    async deliver(message: OutgoingMessage): Promise<DeliveryReceipt> {
      const body = JSON.stringify(discordMessage(message, { publicUrl: opts.publicUrl, timezone: opts.timezone }));
      const answer = await postToChannel({
        channel: "discord",
        url: url.toString(),
        receiver: `Discord webhook on ${url.host}`,
        headers: { "user-agent": "dvault-discord/1" },
        body,
        ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
        ...(opts.now ? { now: opts.now } : {}),
      });
      return { ...answer };
    },
  };
}
