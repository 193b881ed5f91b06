// The digest settings: defaults, one clear line per bad variable, and a channel without what it needs.
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
});
