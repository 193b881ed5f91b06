// The SMTP channel (nodemailer): one connection per message, implicit TLS or STARTTLS, optional login,
// and the digest's stable Message-ID so a resend after a crash threads with (and can be recognised as)
// the first copy.
import { registerSecret } from "../../redact.ts";
import type { SmtpConfig } from "../../config/digest.ts";
import type { Deliverer, DeliveryReceipt, OutgoingMessage } from "../types.ts";

/** The server refused the message or some recipients; the message says which and why. */
export class SmtpDeliveryError extends Error {
  constructor(
    message: string,
    readonly responseCode: number | undefined,
  ) {
    super(message);
    this.name = "SmtpDeliveryError";
  }
}

/**
 * The recipients the server refused while it took the message for the others (a typo in DVAULT_SMTP_TO): the
 * delivery stands (a retry would send the others a second copy), but they got nothing, and `digest --send`,
 * `--history` and the worker's log say so. Read from a stored receipt (the digests table's delivery).
 */
export function refusedRecipients(receipt: DeliveryReceipt | null | undefined): string[] {
  const rejected = receipt?.rejected;
  return Array.isArray(rejected) ? rejected.map(String) : [];
}

export function smtpDeliverer(config: SmtpConfig): Deliverer {
  registerSecret(config.pass);
  return {
    channel: "smtp",
    async deliver(message: OutgoingMessage): Promise<DeliveryReceipt> {
      // nodemailer loads with the first message: the commands that merely carry the job catalogue (sync,
      // download, jobs) start without it (docs/PERFORMANCE.md#start-up).
      const { createTransport } = await import("nodemailer");
      const transport = createTransport({
        host: config.host,
        port: config.port,
        secure: config.secure,
        // Never send a password in clear: with a login, STARTTLS is required when not on implicit TLS.
        requireTLS: !config.secure && Boolean(config.user),
        ...(config.user ? { auth: { user: config.user, pass: config.pass ?? "" } } : {}),
        connectionTimeout: 30_000,
        greetingTimeout: 30_000,
        socketTimeout: 60_000,
      });
      try {
        const info = await transport.sendMail({
          from: config.from,
          to: [...config.to],
          subject: message.subject,
          text: message.text,
          html: message.html,
          // The digest's thumbnails as inline parts its HTML shows by cid: (digest images.ts).
          attachments: (message.images ?? [])
            .filter((i) => i.cid)
            .map((i) => ({ cid: i.cid, filename: i.fileName, content: i.bytes, contentType: i.contentType, contentDisposition: "inline" as const })),
          messageId: message.messageId,
          date: message.date,
          headers: {
            "X-Dvault-Idempotency-Key": message.idempotencyKey,
            "X-Dvault-Kind": message.kind,
            "Auto-Submitted": "auto-generated",
          },
        });
        if (info.accepted.length === 0) {
          throw new SmtpDeliveryError(`the SMTP server accepted none of the recipients (${info.rejected.join(", ")}): ${info.response}`, undefined);
        }
        return { messageId: info.messageId, response: info.response, accepted: info.accepted, rejected: info.rejected };
      } catch (err) {
        if (err instanceof SmtpDeliveryError) throw err;
        const e = err as Error & { responseCode?: number; code?: string; response?: string };
        // The server's line starts with its code already ("550 no such mailbox"): said once.
        const answer = e.response ?? e.message;
        const what = e.responseCode
          ? answer.startsWith(String(e.responseCode))
            ? answer
            : `${e.responseCode} ${answer}`
          : `${e.code ? `${e.code}: ` : ""}${e.message}`;
        throw new SmtpDeliveryError(`SMTP delivery to ${config.host}:${config.port} failed: ${what.trim()}`, e.responseCode);
      } finally {
        transport.close();
      }
    },
  };
}
