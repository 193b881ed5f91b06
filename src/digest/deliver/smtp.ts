// The SMTP channel (nodemailer): one connection per message, implicit TLS or STARTTLS, optional login,
// and the digest's stable Message-ID so a resend after a crash threads with (and can be recognised as)
// the first copy.
import { registerSecret } from "../../redact.ts";
import type { SmtpConfig } from "../../config/digest.ts";
import type { Deliverer, DeliveryReceipt, OutgoingMessage } from "../types.ts";

/**
 * The server refused the message or some recipients; the message says which and why. `reached`: the recipients
 * that got it all the same (the server deferred the others), to whom a retry does not send it again; `deferred`: the
 * recipients the server answered with a 4xx (greylisting, a full mailbox), owed the message.
 */
export class SmtpDeliveryError extends Error {
  constructor(
    message: string,
    readonly responseCode: number | undefined,
    readonly reached: readonly string[] = [],
    readonly deferred: readonly string[] = [],
  ) {
    super(message);
    this.name = "SmtpDeliveryError";
  }
}

/** A list of addresses a stored receipt keeps under `field`, read tolerantly (an older or odd row: none). */
function addressesIn(receipt: DeliveryReceipt | null | undefined, field: "accepted" | "rejected" | "refusedAfterDeferrals"): string[] {
  const list = receipt?.[field];
  return Array.isArray(list) ? list.map(String) : [];
}

/** The recipients a stored receipt says got the message (its `accepted`): a retry leaves them out. */
export function reachedRecipients(receipt: DeliveryReceipt | null | undefined): string[] {
  return addressesIn(receipt, "accepted");
}

/** The address of a DVAULT_SMTP_TO entry ("Partner <new@example.org>" or new@example.org), as the server's answers name it. */
function addressOf(entry: string): string {
  return (/<([^<>]+)>\s*$/.exec(entry)?.[1] ?? entry).trim().toLowerCase();
}

type RecipientError = { recipient?: string; responseCode?: number; response?: string };

/**
 * The recipients the server refused while it took the message for the others (a typo in DVAULT_SMTP_TO): the
 * delivery stands (a retry would send the others a second copy), but they got nothing, and `digest --send`,
 * `--history` and the worker's log say so. Read from a stored receipt (the digests table's delivery).
 */
export function refusedRecipients(receipt: DeliveryReceipt | null | undefined): string[] {
  return addressesIn(receipt, "rejected");
}

type SmtpFailure = Error & { responseCode?: number; code?: string; response?: string; command?: string; originalCode?: string };

/**
 * The recipients a stored receipt says the server kept deferring until the digest's last attempt, counted as refused
 * (run-digest.ts): they are among `rejected` too.
 */
export function refusedAfterDeferrals(receipt: DeliveryReceipt | null | undefined): string[] {
  return addressesIn(receipt, "refusedAfterDeferrals");
}

/**
 * What went wrong, in a line: the server's answer with its code said once ("550 no such mailbox"), or nodemailer's
 * words, except for the two TLS settings that do not fit the server, which say what to set instead, and a TLS
 * handshake that failed after STARTTLS, which names the certificate's fault.
 */
export function failureText(e: SmtpFailure, config: SmtpConfig): string {
  // The server's line starts with its code already ("550 no such mailbox"): said once.
  const answer = (e.response ?? e.message).trim();
  const said = e.responseCode ? (answer.startsWith(String(e.responseCode)) ? answer : `${e.responseCode} ${answer}`) : undefined;
  // nodemailer raises ETLS at STARTTLS both when the server answers it with a non-2xx (its reply in e.response) and
  // when the server took it and the TLS handshake then failed; a certificate Node refuses (self-signed, expired, another
  // name) is an ESOCKET whose originalCode is Node's (CERT_HAS_EXPIRED, DEPTH_ZERO_SELF_SIGNED_CERT, ...). Neither is
  // the server refusing STARTTLS.
  const certificate = e.code === "ESOCKET" && /CERT|SELF_SIGNED|UNABLE_TO_(VERIFY|GET_ISSUER)/.test(e.originalCode ?? "");
  if (certificate || (e.code === "ETLS" && e.command === "STARTTLS" && !e.response)) {
    const reason = e.message.replace(/^Error initiating TLS - /, "");
    return `the TLS handshake${config.secure ? "" : " after STARTTLS"} failed (${reason}): the server's certificate must be valid, unexpired and name ${config.host}`;
  }
  if (e.code === "ETLS" && e.command === "STARTTLS" && config.user) {
    return `the server refused STARTTLS (${said ?? e.message}), and dvault sends DVAULT_SMTP_USER's password only over TLS: set DVAULT_SMTP_SECURE=true if the server takes TLS from its first byte (often port 465), or use a server that offers STARTTLS`;
  }
  // OpenSSL's "wrong version number": what came back was the server's greeting in clear, not TLS.
  if (e.code === "ESOCKET" && /wrong version number/i.test(e.message)) {
    return "the server did not answer in TLS, which DVAULT_SMTP_SECURE=true expects from the first byte (port 465): for a server that starts in clear and offers STARTTLS (often port 587 or 25), set DVAULT_SMTP_SECURE=false";
  }
  return said ?? `${e.code ? `${e.code}: ` : ""}${e.message}`.trim();
}

/**
 * A 4xx for a recipient (greylisting, a full mailbox) asks to try again later: the delivery fails, to be retried for
 * them alone while `accepted` got it; what a last attempt does with them is the caller's (run-digest.ts, alerts.ts).
 */
function deferredError(config: SmtpConfig, rejected: RecipientError[] | undefined, accepted: string[]): SmtpDeliveryError | undefined {
  const deferred = (rejected ?? []).filter((e) => e.responseCode !== undefined && e.responseCode >= 400 && e.responseCode < 500);
  if (deferred.length === 0) return undefined;
  const why = failureText(deferred[0] as SmtpFailure, config);
  const waiting = deferred.map((e) => String(e.recipient));
  return new SmtpDeliveryError(
    `SMTP delivery to ${config.host}:${config.port} deferred ${waiting.join(", ")} (${why}) while ${accepted.join(", ")} got it: the retry sends it to them alone`,
    deferred[0]?.responseCode,
    accepted,
    waiting,
  );
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
      // An earlier attempt reached some recipients while the server deferred the others: to those alone.
      const reached = message.reached ?? [];
      const to = config.to.filter((t) => !reached.some((r) => r.toLowerCase() === addressOf(t)));
      if (to.length === 0) return { messageId: message.messageId, accepted: [...reached], rejected: [] };
      try {
        const info = await transport.sendMail({
          from: config.from,
          to,
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
        const accepted = [...reached, ...info.accepted.map(String)];
        const deferred = deferredError(config, (info as { rejectedErrors?: RecipientError[] }).rejectedErrors, accepted);
        if (deferred) throw deferred;
        return { messageId: info.messageId, response: info.response, accepted, rejected: info.rejected };
      } catch (err) {
        if (err instanceof SmtpDeliveryError) throw err;
        const e = err as SmtpFailure & { rejectedErrors?: RecipientError[] };
        // Every recipient of this attempt deferred (the one an earlier attempt did not reach, again): still owed it.
        const deferred = e.code === "EENVELOPE" && reached.length > 0 ? deferredError(config, e.rejectedErrors, [...reached]) : undefined;
        if (deferred) throw deferred;
        throw new SmtpDeliveryError(`SMTP delivery to ${config.host}:${config.port} failed: ${failureText(e, config)}`, e.responseCode);
      } finally {
        transport.close();
      }
    },
  };
}
