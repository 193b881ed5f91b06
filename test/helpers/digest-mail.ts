// A real SMTP server for digest tests (the smtp-server package) that keeps every message it accepts,
// can refuse the next N, and a small MIME reader for what nodemailer sends: headers (encoded words
// decoded), and the text/plain and text/html parts (quoted-printable or base64).
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

export type ReceivedMail = {
  raw: string;
  headers: Map<string, string>;
  subject: string;
  messageId: string;
  text: string;
  html: string;
  /** The other parts (inline images): their Content-ID (without angle brackets), type and bytes. */
  parts: MailPart[];
  from: string;
  to: string[];
};

export type MailPart = { contentId: string | undefined; contentType: string; bytes: Buffer };

export type TestSmtp = {
  port: number;
  received: ReceivedMail[];
  /** Answer the next `n` messages with a 451 (temporary) failure. */
  rejectNext(n: number): void;
  /** Answer RCPT TO for `address` with a 550 (no such mailbox), as a server does for a typo: the others still get the message. */
  refuseRecipient(address: string): void;
  /** Answer RCPT TO for `address` with a 450 (greylisted, try again later) the next `times` times, as a greylisting server does for a new sender. */
  deferRecipient(address: string, times: number): void;
  rejected: number;
  /** Resolves once `n` messages have been accepted in total. */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
};

export async function startTestSmtp(): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  let toReject = 0;
  const state = { rejected: 0 };
  const waiters: Array<() => void> = [];
  const unknown = new Set<string>();
  const deferred = new Map<string, number>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (unknown.has(address.address)) return callback(Object.assign(new Error("no such mailbox here"), { responseCode: 550 }));
      const left = deferred.get(address.address) ?? 0;
      if (left > 0) {
        deferred.set(address.address, left - 1);
        return callback(Object.assign(new Error("greylisted, try again in 5 minutes"), { responseCode: 450 }));
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        if (toReject > 0) {
          toReject--;
          state.rejected++;
          const err = Object.assign(new Error("mailbox temporarily unavailable, try again later"), { responseCode: 451 });
          return callback(err);
        }
        const raw = Buffer.concat(chunks).toString("utf8");
        received.push({ ...parseMail(raw), to: session.envelope.rcptTo.map((r) => r.address) });
        for (const w of waiters.splice(0)) w();
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    received,
    rejectNext(n) {
      toReject = n;
    },
    refuseRecipient(address) {
      unknown.add(address);
    },
    deferRecipient(address, times) {
      deferred.set(address, times);
    },
    get rejected() {
      return state.rejected;
    },
    async waitFor(n, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < n) {
        if (Date.now() > deadline) throw new Error(`expected ${n} mail(s), got ${received.length}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
      return received;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Decodes RFC 2047 encoded words (=?UTF-8?Q?...?= and =?UTF-8?B?...?=), joining adjacent ones. */
export function decodeWords(value: string): string {
  return value.replace(/\?=\s+=\?/g, "?==?").replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (_m, _charset: string, enc: string, data: string) => {
    if (enc.toUpperCase() === "B") return Buffer.from(data, "base64").toString("utf8");
    const bytes = data.replace(/_/g, " ").replace(/=([0-9A-Fa-f]{2})/g, (_x, h: string) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, "latin1").toString("utf8");
  });
}

function decodeQuotedPrintable(body: string): string {
  const bytes = body.replace(/=\r?\n/g, "").replace(/=([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
  return Buffer.from(bytes, "latin1").toString("utf8");
}

function splitHead(raw: string): { headers: Map<string, string>; body: string } {
  const at = raw.search(/\r?\n\r?\n/);
  const head = at < 0 ? raw : raw.slice(0, at);
  const body = at < 0 ? "" : raw.slice(at).replace(/^\r?\n\r?\n/, "");
  const headers = new Map<string, string>();
  for (const line of head.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i > 0) headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return { headers, body };
}

function decodePart(headers: Map<string, string>, body: string): string {
  const enc = (headers.get("content-transfer-encoding") ?? "7bit").toLowerCase();
  if (enc === "base64") return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
  if (enc === "quoted-printable") return decodeQuotedPrintable(body);
  return body;
}

type Collected = { text: string; html: string; parts: MailPart[] };

function collectParts(headers: Map<string, string>, body: string, out: Collected): void {
  const type = headers.get("content-type") ?? "text/plain";
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (/^multipart\//i.test(type) && boundary) {
    const pieces = body.split(`--${boundary}`).slice(1);
    for (const piece of pieces) {
      if (piece.startsWith("--")) break;
      const part = splitHead(piece.replace(/^\r?\n/, ""));
      collectParts(part.headers, part.body.replace(/\r?\n$/, ""), out);
    }
    return;
  }
  if (/^text\/html/i.test(type)) out.html = decodePart(headers, body);
  else if (/^text\/plain/i.test(type)) out.text = decodePart(headers, body);
  else {
    const enc = (headers.get("content-transfer-encoding") ?? "7bit").toLowerCase();
    const bytes = enc === "base64" ? Buffer.from(body.replace(/\s+/g, ""), "base64") : Buffer.from(body, "latin1");
    const cid = /<([^>]+)>/.exec(headers.get("content-id") ?? "")?.[1];
    out.parts.push({ contentId: cid, contentType: type.split(";")[0]?.trim().toLowerCase() ?? "", bytes });
  }
}

export function parseMail(raw: string): Omit<ReceivedMail, "to"> {
  const { headers, body } = splitHead(raw);
  const parts: Collected = { text: "", html: "", parts: [] };
  collectParts(headers, body, parts);
  return {
    raw,
    headers,
    subject: decodeWords(headers.get("subject") ?? ""),
    messageId: headers.get("message-id") ?? "",
    from: decodeWords(headers.get("from") ?? ""),
    text: parts.text.replace(/\r\n/g, "\n"),
    html: parts.html.replace(/\r\n/g, "\n"),
    parts: parts.parts,
  };
}
