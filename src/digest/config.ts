// The digest's settings are parsed with the rest of the config (src/config/digest.ts); re-exported here so the
// digest's modules keep one short import for the types they read.
export {
  DEFAULT_DIGEST_CRON,
  DIGEST_CHANNELS,
  DISCORD_WEBHOOK_PATH,
  type DigestChannel,
  type DigestConfig,
  type DiscordConfig,
  type NtfyConfig,
  type SmtpConfig,
  type WebhookConfig,
} from "../config/digest.ts";
