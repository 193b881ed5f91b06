// The digest settings: defaults, one clear line per bad variable, and a channel without what it needs.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { parseSince } from "../../src/cli/digest.ts";
import { signWebhookBody, verifyWebhookSignature } from "../../src/digest/deliver/webhook.ts";

const load = (env: Record<string, string>) => loadConfig({ HOME: "/nonexistent", ...env }, "/srv/dvault");

describe("digest configuration", () => {
  it("defaults to a daily 08:00 UTC digest with no channel (preview only)", () => {
    const { digest } = load({});
    expect(digest).toMatchObject({
      cron: "0 8 * * *",
      timezone: "UTC",
      channels: [],
      dir: "/srv/dvault/digests",
      sendEmpty: false,
      smtp: undefined,
      webhook: undefined,
    });
  });

  it("reads channels, SMTP and webhook settings", () => {
    const { digest } = load({
      DVAULT_DIGEST_CRON: "30 7 * * 1-5",
      DVAULT_DIGEST_TZ: "Europe/Berlin",
      DVAULT_DIGEST_CHANNELS: "smtp, webhook,file",
      DVAULT_DIGEST_DIR: "out",
      DVAULT_DIGEST_SEND_EMPTY: "yes",
      DVAULT_SMTP_HOST: "mail.example.org",
      DVAULT_SMTP_SECURE: "true",
      DVAULT_SMTP_USER: "me",
      DVAULT_SMTP_PASS: "pw-123456",
      DVAULT_SMTP_FROM: "dvault <dvault@example.org>",
      DVAULT_SMTP_TO: "me@example.org, you@example.org",
      DVAULT_WEBHOOK_URL: "https://hooks.example.org/dvault",
      DVAULT_WEBHOOK_SECRET: "0123456789abcdef0123",
    });
    expect(digest.channels).toEqual(["smtp", "webhook", "file"]);
    expect(digest.dir).toBe("/srv/dvault/out");
    expect(digest.sendEmpty).toBe(true);
    expect(digest.smtp).toEqual({
      host: "mail.example.org",
      port: 465,
      secure: true,
      user: "me",
      pass: "pw-123456",
      from: "dvault <dvault@example.org>",
      to: ["me@example.org", "you@example.org"],
    });
    expect(digest.webhook).toEqual({ url: "https://hooks.example.org/dvault", secret: "0123456789abcdef0123" });
  });

  it("names every bad variable in one error", () => {
    const err = (() => {
      try {
        load({
          DVAULT_DIGEST_CRON: "every morning",
          DVAULT_DIGEST_TZ: "Mars/Olympus",
          DVAULT_DIGEST_CHANNELS: "smtp,pigeon",
          DVAULT_SMTP_PORT: "70000",
          DVAULT_DIGEST_SEND_EMPTY: "maybe",
        });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    for (const name of ["DVAULT_DIGEST_CRON", "DVAULT_DIGEST_TZ", "DVAULT_DIGEST_CHANNELS", "DVAULT_SMTP_PORT", "DVAULT_DIGEST_SEND_EMPTY"])
      expect(message).toContain(name);
  });

  it("refuses a cron expression no date satisfies, which would never tick", () => {
    expect(() => load({ DVAULT_DIGEST_CRON: "0 8 30 2 *" })).toThrow(/DVAULT_DIGEST_CRON expects a 5-field cron expression/);
    expect(load({ DVAULT_DIGEST_CRON: "0 8 L * *" }).digest.cron).toBe("0 8 L * *");
  });

  it("refuses a channel without what it needs", () => {
    expect(() => load({ DVAULT_DIGEST_CHANNELS: "smtp" })).toThrow(
      /DVAULT_SMTP_HOST, DVAULT_SMTP_FROM, DVAULT_SMTP_TO must be set when DVAULT_DIGEST_CHANNELS includes smtp/,
    );
    expect(() => load({ DVAULT_DIGEST_CHANNELS: "webhook", DVAULT_WEBHOOK_URL: "https://h.example" })).toThrow(/DVAULT_WEBHOOK_SECRET must be set/);
    expect(() => load({ DVAULT_WEBHOOK_SECRET: "short" })).toThrow(/at least 16 characters/);
  });

  it("refuses ntfy or discord listed without its URL, or a URL that is not one, in one line", () => {
    for (const [channel, variable] of [
      ["ntfy", "DVAULT_NTFY_URL must be set when DVAULT_DIGEST_CHANNELS includes ntfy"],
      ["discord", "DVAULT_DISCORD_WEBHOOK_URL (or DVAULT_DISCORD_WEBHOOK_URL_FILE) must be set when DVAULT_DIGEST_CHANNELS includes discord"],
    ] as const) {
      const err = (() => {
        try {
          load({ DVAULT_DIGEST_CHANNELS: channel });
        } catch (e) {
          return e as Error;
        }
      })();
      expect(err).toBeInstanceOf(ConfigError);
      expect(err?.message).toContain(variable);
      expect(err?.message).not.toContain("\n");
    }
    expect(() => load({ DVAULT_NTFY_URL: "https://ntfy.sh/" })).toThrow(/DVAULT_NTFY_URL expects the topic's URL/);
    // A channel's page link is not its webhook.
    expect(() => load({ DVAULT_DISCORD_WEBHOOK_URL: "https://discord.com/channels/123/456" })).toThrow(/DVAULT_DISCORD_WEBHOOK_URL expects the webhook URL/);
  });

  it("reads ntfy and Discord settings, the token and the webhook URL also from *_FILE", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "dvault-secret-files-"));
    try {
      writeFileSync(path.join(dir, "token"), "tk_0123456789abcdefghijklmnop\n");
      writeFileSync(path.join(dir, "discord"), "https://discord.com/api/webhooks/1234567890/AbC-dEf_123456789\n");
      const { digest } = load({
        DVAULT_DIGEST_CHANNELS: "ntfy,discord",
        DVAULT_NTFY_URL: "https://ntfy.example.org/base/dvault-me",
        DVAULT_NTFY_TOKEN_FILE: path.join(dir, "token"),
        DVAULT_DISCORD_WEBHOOK_URL_FILE: path.join(dir, "discord"),
        DVAULT_PUBLIC_URL: "https://dvault.example.org/",
      });
      expect(digest).toMatchObject({
        channels: ["ntfy", "discord"],
        ntfy: { url: "https://ntfy.example.org/base/dvault-me", token: "tk_0123456789abcdefghijklmnop" },
        discord: { webhookUrl: "https://discord.com/api/webhooks/1234567890/AbC-dEf_123456789" },
        publicUrl: "https://dvault.example.org",
      });
      expect(() => load({ DVAULT_NTFY_TOKEN: "tk_x", DVAULT_NTFY_TOKEN_FILE: path.join(dir, "token") })).toThrow(
        /DVAULT_NTFY_TOKEN and DVAULT_NTFY_TOKEN_FILE are both set: keep one/,
      );
      expect(() => load({ DVAULT_DISCORD_WEBHOOK_URL_FILE: path.join(dir, "missing") })).toThrow(
        /DVAULT_DISCORD_WEBHOOK_URL_FILE .* cannot be read \(ENOENT\)/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("webhook signatures", () => {
  it("is sha256=<hex> of the exact body, checked in constant time", () => {
    const sig = signWebhookBody("s3cret-s3cret-s3cret", '{"a":1}');
    // printf '{"a":1}' | openssl dgst -sha256 -hmac 's3cret-s3cret-s3cret'
    expect(sig).toBe("sha256=5069bca37cc1678100452206d122f1f2b7262923fb56e6706482811a3709f246");
    expect(verifyWebhookSignature("s3cret-s3cret-s3cret", '{"a":1}', sig)).toBe(true);
    expect(verifyWebhookSignature("s3cret-s3cret-s3cret", '{"a":2}', sig)).toBe(false);
    expect(verifyWebhookSignature("s3cret-s3cret-s3cret", '{"a":1}', undefined)).toBe(false);
  });
});

describe(parseSince.name, () => {
  const now = Date.parse("2026-11-03T08:00:00Z");
  it("reads ISO times and durations back from now", () => {
    expect(parseSince("2026-11-01T08:00Z", now).toISOString()).toBe("2026-11-01T08:00:00.000Z");
    expect(parseSince("36h", now).toISOString()).toBe("2026-11-01T20:00:00.000Z");
    expect(parseSince("2d", now).toISOString()).toBe("2026-11-01T08:00:00.000Z");
    expect(() => parseSince("yesterday-ish", now)).toThrow(/is not a time/);
  });

  it("reads an offset and a date alone the same on any machine, and refuses what is no such time in one line", () => {
    expect(parseSince("2026-11-01T09:00+01:00", now).toISOString()).toBe("2026-11-01T08:00:00.000Z");
    expect(parseSince(" 2026-11-01 ", now).toISOString()).toBe("2026-11-01T00:00:00.000Z");
    // Without its zone the time was read in the zone of the machine running the command.
    expect(() => parseSince("2026-11-01T08:00", now)).toThrow(/^--since "2026-11-01T08:00" has no zone: add Z for UTC or its offset/);
    // Date.parse took "5" for 1 May 2001, "March 7" for 2001 too, and 30 February for 2 March.
    for (const garbage of ["5", "March 7", "2026-02-30", "2026-11-01T25:00Z", "99999999999w", ""]) {
      expect(() => parseSince(garbage, now), garbage).toThrow(/is not a time: give an ISO time with its zone .* or a duration/);
    }
    // A window that ends now cannot start later: one line, not "unexpected error".
    expect(() => parseSince("2026-11-04", now)).toThrow(/^--since "2026-11-04" is 2026-11-04T00:00:00.000Z, not in the past: give an earlier time$/);
    expect(() => parseSince("0h", now)).toThrow(/not in the past/);
    expect(() => parseSince("2026-11-01", now)).not.toThrow();
  });
});
