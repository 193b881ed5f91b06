// The README's DVAULT_SMTP_SECURE=false: "STARTTLS when the server offers it, and required whenever a password is
// sent". A real SMTP server (the smtp-server package) that offers no STARTTLS but would take a login in clear: the
// smtp channel refuses to deliver rather than send the password, and the server never sees a login attempt.
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failureText, smtpDeliverer } from "../../src/digest/deliver/smtp.ts";
import type { OutgoingMessage } from "../../src/digest/types.ts";

const PASSWORD = "hunter2-never-in-clear";
const logins: string[] = [];
const accepted: string[] = [];
let server: SMTPServer;
let port: number;

beforeAll(async () => {
  server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    authOptional: true,
    logger: false,
    onAuth(auth, _session, callback) {
      logins.push(`${auth.username}:${auth.password}`);
      callback(null, { user: auth.username });
    },
    onData(stream, session, callback) {
      stream.resume();
      stream.on("end", () => {
        accepted.push(session.envelope.rcptTo.map((r) => r.address).join(","));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

const message: OutgoingMessage = {
  kind: "alert",
  idempotencyKey: "alert-smtp-password",
  messageId: "<alert-smtp-password@example.org>",
  subject: "dvault alert",
  html: "<p>alert</p>",
  text: "alert",
  payload: {},
  fileBase: "alert",
  date: new Date("2026-11-23T08:00:00Z"),
};

describe("the smtp channel over a server without STARTTLS", () => {
  const base = { host: "127.0.0.1", secure: false, from: "dvault <dvault@example.org>", to: ["me@example.org"] };

  it("with a login: refuses to deliver, and the password never goes out", async () => {
    // nodemailer asks for STARTTLS anyway, which this server does not know: the delivery fails there (and is retried).
    const before = { accepted: accepted.length, logins: logins.length };
    // The one line says why (no TLS for the login) and what to set, not only the server's "command not recognized".
    await expect(smtpDeliverer({ ...base, port, user: "dvault", pass: PASSWORD }).deliver(message)).rejects.toThrow(
      /^SMTP delivery to 127\.0\.0\.1:\d+ failed: the server refused STARTTLS \(5\d\d [^)]*\), and dvault sends DVAULT_SMTP_USER's password only over TLS: set DVAULT_SMTP_SECURE=true if the server takes TLS from its first byte \(often port 465\), or use a server that offers STARTTLS$/,
    );
    expect(logins.slice(before.logins)).toEqual([]);
    expect(accepted.slice(before.accepted)).toEqual([]);
  });

  it("with DVAULT_SMTP_SECURE=true: says the server answered without TLS and what to set, not OpenSSL's words", async () => {
    const before = { accepted: accepted.length, logins: logins.length };
    await expect(smtpDeliverer({ ...base, secure: true, port, user: "dvault", pass: PASSWORD }).deliver(message)).rejects.toThrow(
      /^SMTP delivery to 127\.0\.0\.1:\d+ failed: the server did not answer in TLS, which DVAULT_SMTP_SECURE=true expects from the first byte \(port 465\): for a server that starts in clear and offers STARTTLS \(often port 587 or 25\), set DVAULT_SMTP_SECURE=false$/,
    );
    expect(logins.slice(before.logins)).toEqual([]);
    expect(accepted.slice(before.accepted)).toEqual([]);
  });

  it("without a login: delivers in the clear, as the server allows", async () => {
    const before = { accepted: accepted.length, logins: logins.length };
    await smtpDeliverer({ ...base, port, user: undefined, pass: undefined }).deliver(message);
    expect(accepted.slice(before.accepted)).toEqual(["me@example.org"]);
    expect(logins.slice(before.logins)).toEqual([]);
  });
});

describe("the smtp channel over a server whose STARTTLS certificate is not trusted", () => {
  // smtp-server's own self-signed certificate: the server takes STARTTLS and the handshake then fails.
  let tlsServer: SMTPServer;
  let tlsPort: number;
  beforeAll(async () => {
    tlsServer = new SMTPServer({ authOptional: true, logger: false, onData: (stream, _s, callback) => stream.resume().on("end", () => callback()) });
    await new Promise<void>((resolve) => tlsServer.listen(0, "127.0.0.1", resolve));
    tlsPort = (tlsServer.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => tlsServer?.close(() => resolve()));
  });

  it("says the TLS handshake failed and why, not that the server refused STARTTLS", async () => {
    const config = { host: "127.0.0.1", secure: false, from: "dvault <dvault@example.org>", to: ["me@example.org"], port: tlsPort };
    await expect(smtpDeliverer({ ...config, user: "dvault", pass: PASSWORD }).deliver(message)).rejects.toThrow(
      /^SMTP delivery to 127\.0\.0\.1:\d+ failed: the TLS handshake after STARTTLS failed \([^)]*certificate[^)]*\): the server's certificate must be valid, unexpired and name 127\.0\.0\.1$/,
    );
  });

  it("an ETLS at STARTTLS without the server's reply is a failed handshake; with a non-2xx reply, a refusal", () => {
    // nodemailer's errors as smtp-connection makes them: "Error initiating TLS - <reason>" when the server took STARTTLS
    // and the upgrade then failed (no response), "Error upgrading connection with STARTTLS: <reply>" when it refused.
    const config = { host: "mail.example.org", port: 587, secure: false, from: "dvault@example.org", to: ["me@example.org"], user: "dvault", pass: PASSWORD };
    const failed = Object.assign(new Error("Error initiating TLS - unable to verify the first certificate"), { code: "ETLS", command: "STARTTLS" });
    expect(failureText(failed, config)).toBe(
      "the TLS handshake after STARTTLS failed (unable to verify the first certificate): the server's certificate must be valid, unexpired and name mail.example.org",
    );
    const refused = Object.assign(new Error("Error upgrading connection with STARTTLS: 454 TLS not available"), {
      code: "ETLS",
      command: "STARTTLS",
      response: "454 TLS not available",
      responseCode: 454,
    });
    expect(failureText(refused, config)).toMatch(
      /^the server refused STARTTLS \(454 TLS not available\), and dvault sends DVAULT_SMTP_USER's password only over TLS: set DVAULT_SMTP_SECURE=true/,
    );
  });
});
