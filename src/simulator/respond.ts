// Writing an answer to the socket: as it is, or spoiled by the fault a rule chose for this request (the
// connection reset before or in the middle of the body, a body of the wrong shape or cut short).
import type { IncomingMessage, ServerResponse } from "node:http";
import { corruptBody, type FaultRule } from "./faults.ts";
import type { Reply } from "./http.ts";
import type { RequestLogEntry } from "./request-log.ts";

function serialise(reply: Reply): { status: number; headers: Record<string, string>; body: Buffer | string } {
  if ("redirect" in reply) return { status: reply.status, headers: { location: reply.redirect, "content-type": "text/html; charset=utf-8" }, body: "" };
  if ("json" in reply) {
    return { status: reply.status, headers: { "content-type": "application/json; charset=utf-8", ...reply.headers }, body: JSON.stringify(reply.json) };
  }
  return { status: reply.status, headers: { "content-type": reply.contentType, ...reply.headers }, body: reply.text };
}

export function send(res: ServerResponse, reply: Reply): void {
  const out = serialise(reply);
  const bodyLength = typeof out.body === "string" ? Buffer.byteLength(out.body) : out.body.length;
  res.writeHead(out.status, { ...out.headers, "content-length": bodyLength });
  res.end(out.body);
}

/** Sends `reply` as the fault (if any) wants it, and records the status the client saw. */
export function sendWithFault(args: { req: IncomingMessage; res: ServerResponse; reply: Reply; fault: FaultRule | undefined; entry: RequestLogEntry }): void {
  const { req, res, fault, entry } = args;
  let { reply } = args;
  if (fault?.kind === "reset") {
    // The request was processed (a refresh token is consumed) but the response is lost.
    entry.status = 0;
    req.socket.destroy();
    return;
  }
  entry.status = reply.status;
  if (fault?.kind === "reset_mid_body") {
    // Headers and part of the body, then the connection drops.
    const full = serialise(reply);
    const bytes = typeof full.body === "string" ? Buffer.from(full.body) : full.body;
    const cut = Math.max(0, Math.min(bytes.length, fault.atByte ?? Math.floor(bytes.length / 2)));
    res.writeHead(full.status, { ...full.headers, "content-length": bytes.length });
    res.write(bytes.subarray(0, cut), () => {
      req.socket.destroy();
    });
    return;
  }
  if ((fault?.kind === "wrong_shape" || fault?.kind === "broken_item") && "json" in reply) {
    reply = { ...reply, json: corruptBody(fault.kind, reply.json) };
  }
  if (fault?.kind === "malformed_json") {
    const full = serialise(reply);
    const text = typeof full.body === "string" ? full.body : full.body.toString("utf8");
    const truncated = text.length > 2 ? text.slice(0, Math.max(1, Math.floor(text.length / 2))) : '{"has_more":tr';
    entry.status = 200;
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(truncated) });
    res.end(truncated);
    return;
  }
  send(res, reply);
}
