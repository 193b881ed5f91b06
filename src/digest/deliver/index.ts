// The configured channels (DVAULT_DIGEST_CHANNELS) as deliverers, and the identity every message carries.
import type { DigestConfig, DigestChannel } from "../../config/digest.ts";
import type { Deliverer } from "../types.ts";
import { discordDeliverer } from "./discord.ts";
import { fileDeliverer } from "./file.ts";
import { ntfyDeliverer } from "./ntfy.ts";
import { smtpDeliverer } from "./smtp.ts";
import { webhookDeliverer } from "./webhook.ts";

/** One deliverer per configured channel, in the configured order. */
export function createDeliverers(config: DigestConfig, only?: readonly DigestChannel[]): Deliverer[] {
  const wanted = only ?? config.channels;
  return wanted.map((channel) => {
    switch (channel) {
      case "smtp":
        if (!config.smtp) throw new Error("the smtp channel needs DVAULT_SMTP_HOST, DVAULT_SMTP_FROM and DVAULT_SMTP_TO");
        return smtpDeliverer(config.smtp);
      case "file":
        return fileDeliverer(config.dir);
      case "webhook":
        if (!config.webhook) throw new Error("the webhook channel needs DVAULT_WEBHOOK_URL and DVAULT_WEBHOOK_SECRET");
        return webhookDeliverer(config.webhook);
      case "ntfy":
        if (!config.ntfy) throw new Error("the ntfy channel needs DVAULT_NTFY_URL");
        return ntfyDeliverer(config.ntfy, { publicUrl: config.publicUrl });
      case "discord":
        if (!config.discord) throw new Error("the discord channel needs DVAULT_DISCORD_WEBHOOK_URL");
        return discordDeliverer(config.discord, { publicUrl: config.publicUrl, timezone: config.timezone });
      default: {
        const never: never = channel;
        throw new Error(`unknown digest channel ${String(never)}`);
      }
    }
  });
}

/** The domain part of Message-IDs: the sender's domain when SMTP is configured. */
export function messageDomainOf(config: DigestConfig): string {
  const from = config.smtp?.from ?? "";
  const m = /@([A-Za-z0-9.-]+)>?\s*$/.exec(from);
  return m?.[1] ?? "dvault.invalid";
}

/** `<key@domain>`: a Message-ID that is the same for every attempt of the same digest or alert. */
export function messageIdFor(key: string, domain = "dvault.invalid"): string {
  return `<${key}@${domain}>`;
}
