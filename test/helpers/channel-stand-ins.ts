// Small local HTTP servers standing in for ntfy and Discord: each records what it received and answers as
// the real service does, including the refusals (Discord's 400 for an embed past its limits, written here
// from Discord's documented limits, not from dvault's code) and answers a test queues (500, 429).
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as received, and the status it was answered with. */
export type Received = { method: string; path: string; headers: IncomingHttpHeaders; body: unknown; raw: string; status: number };
export type Answer = { status: number; body?: unknown; headers?: Record<string, string> };

export type StandIn = {
  url: string;
  received: Received[];
  /** The next answers, in order, before the stand-in's own. */
  answerNext(...answers: Answer[]): void;
  close(): Promise<void>;
};

async function startStandIn(answer: (r: Received) => Answer): Promise<StandIn> {
  const received: Received[] = [];
  const queued: Answer[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: unknown = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        /* kept as text */
      }
      const r: Received = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body, raw, status: 0 };
      const a = queued.shift() ?? answer(r);
      r.status = a.status;
      received.push(r);
      res.writeHead(a.status, { "content-type": "application/json", ...a.headers }).end(a.body === undefined ? "" : JSON.stringify(a.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    answerNext: (...answers) => queued.push(...answers),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

let seq = 0;

/** ntfy's JSON publishing: POST to the server's root with the topic in the body; a token as Bearer when set. */
export function startNtfyStandIn(opts: { token?: string } = {}): Promise<StandIn> {
  return startStandIn((r) => {
    if (r.method !== "POST" || r.path !== "/") return { status: 404, body: { code: 40401, http: 404, error: "page not found" } };
    if (opts.token && r.headers.authorization !== `Bearer ${opts.token}`) return { status: 401, body: { code: 40101, http: 401, error: "unauthorized" } };
    const b = r.body as { topic?: unknown; message?: unknown };
    if (typeof b !== "object" || typeof b.topic !== "string") return { status: 400, body: { code: 40011, http: 400, error: "invalid request: topic invalid" } };
    if (typeof b.message === "string" && Buffer.byteLength(b.message) > 4096) return { status: 413, body: { code: 41301, http: 413, error: "too large" } };
    return { status: 200, body: { id: `ntfy${++seq}`, time: 1_700_000_000, event: "message", topic: b.topic, message: b.message } };
  });
}

const DISCORD = { embeds: 10, fields: 25, total: 6000, content: 2000, title: 256, description: 4096, fieldName: 256, fieldValue: 1024, footer: 2048 };
const isHttpUrl = (v: unknown) => typeof v === "string" && /^https?:\/\/[^\s]+$/.test(v);

/** What Discord would refuse in a webhook body (400 Invalid Form Body), per its documented embed limits. */
export function discordProblems(body: unknown): string[] {
  const problems: string[] = [];
  const b = (body ?? {}) as { content?: unknown; embeds?: unknown };
  const embeds = Array.isArray(b.embeds) ? (b.embeds as Array<Record<string, unknown>>) : [];
  if (b.content !== undefined && (typeof b.content !== "string" || b.content.length > DISCORD.content)) problems.push("content: over 2000 characters");
  if (!b.content && embeds.length === 0) problems.push("neither content nor embeds");
  if (embeds.length > DISCORD.embeds) problems.push("more than 10 embeds");
  let total = 0;
  for (const e of embeds) {
    const text = (k: string, max: number) => {
      const v = e[k];
      if (v === undefined) return;
      if (typeof v !== "string" || v.length > max) problems.push(`embed.${k}: not a string of at most ${max}`);
      else total += v.length;
    };
    text("title", DISCORD.title);
    text("description", DISCORD.description);
    if (e.url !== undefined && !isHttpUrl(e.url)) problems.push("embed.url: not a URL");
    if (e.color !== undefined && !(Number.isInteger(e.color) && (e.color as number) >= 0 && (e.color as number) <= 0xffffff)) problems.push("embed.color");
    if (e.timestamp !== undefined && Number.isNaN(Date.parse(String(e.timestamp)))) problems.push("embed.timestamp: not ISO 8601");
    const thumb = e.thumbnail as { url?: unknown } | undefined;
    if (thumb !== undefined && !isHttpUrl(thumb.url)) problems.push("embed.thumbnail.url: not a URL");
    const footer = e.footer as { text?: unknown } | undefined;
    if (footer !== undefined) {
      if (typeof footer.text !== "string" || footer.text.length > DISCORD.footer) problems.push("embed.footer.text");
      else total += footer.text.length;
    }
    const fields = Array.isArray(e.fields) ? (e.fields as Array<Record<string, unknown>>) : [];
    if (fields.length > DISCORD.fields) problems.push("more than 25 fields");
    for (const f of fields) {
      if (typeof f.name !== "string" || !f.name || f.name.length > DISCORD.fieldName) problems.push("field.name: empty or over 256");
      if (typeof f.value !== "string" || !f.value || f.value.length > DISCORD.fieldValue) problems.push("field.value: empty or over 1024");
      total += String(f.name ?? "").length + String(f.value ?? "").length;
    }
  }
  if (total > DISCORD.total) problems.push(`embeds: ${total} characters, over 6000`);
  return problems;
}

/** A Discord webhook at /api/webhooks/<id>/<token>: 400 for a body Discord would refuse, the message with ?wait=true. */
export function startDiscordStandIn(webhook: { id: string; token: string }): Promise<StandIn> {
  return startStandIn((r) => {
    const url = new URL(r.path, "http://stand-in");
    if (r.method !== "POST" || url.pathname !== `/api/webhooks/${webhook.id}/${webhook.token}`)
      return { status: 404, body: { message: "Unknown Webhook", code: 10015 } };
    const problems = discordProblems(r.body);
    if (problems.length) return { status: 400, body: { message: "Invalid Form Body", code: 50035, errors: problems } };
    if (url.searchParams.get("wait") !== "true") return { status: 204 };
    return { status: 200, body: { id: String(1_300_000_000_000_000_000n + BigInt(++seq)), channel_id: "42", webhook_id: webhook.id } };
  });
}
