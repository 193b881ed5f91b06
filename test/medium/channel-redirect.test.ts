// A receiver that answers a channel's POST with a redirect (an http:// address whose server moved to https://)
// must not count as delivered: fetch would follow a 301 or 302 with a GET, whose 200 (Discord describes the
// webhook, ntfy serves its web app) looked like success while no message was posted. A real local server
// redirects; the delivery fails with the status, says what to set, and carries no token.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { discordDeliverer } from "../../src/digest/deliver/discord.ts";
import { ChannelDeliveryError } from "../../src/digest/deliver/http-post.ts";
import { ntfyDeliverer } from "../../src/digest/deliver/ntfy.ts";
import type { OutgoingMessage } from "../../src/digest/types.ts";

const TOKEN = "rEdIrEcT-ToKeN_0123456789abcdefXYZ";
const seen: string[] = [];
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    if (req.method === "POST" && !req.url?.startsWith("/moved/")) return void res.writeHead(301, { location: `/moved${req.url}` }).end();
    // What a GET of the moved address answers: a 200 that says nothing about a message.
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ id: "1234567890123", name: "a webhook" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const alert: OutgoingMessage = {
  kind: "alert",
  idempotencyKey: "dvault-alert-test-1",
  messageId: "<dvault-alert-test-1@dvault>",
  subject: "dvault: downloads paused",
  html: "",
  text: "dvault: downloads paused\nThe disk is full.",
  payload: {},
  fileBase: "alert",
  date: new Date("2026-11-03T08:00:00Z"),
  alert: { kind: "disk", title: "downloads paused", body: "The disk is full.", command: null, reminder: false },
};

describe("a channel whose receiver redirects", () => {
  it.each([
    ["discord", () => discordDeliverer({ webhookUrl: `${base}/api/webhooks/1234567890123/${TOKEN}` }, { publicUrl: undefined, timezone: "UTC" })],
    ["ntfy", () => ntfyDeliverer({ url: `${base}/dvault-topic`, token: undefined })],
  ])("%s: fails with the redirect's status, posts nothing by GET, and names no token", async (_name, make) => {
    seen.length = 0;
    const err = await make()
      .deliver(alert)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(ChannelDeliveryError);
    expect((err as ChannelDeliveryError).status).toBe(301);
    expect((err as Error).message).toMatch(/answered 301, a redirect to http:\/\/127\.0\.0\.1:\d+\/…: set the address it redirects to/);
    expect((err as Error).message).not.toContain(TOKEN);
    expect(seen.map((s) => s.split(" ")[0])).toEqual(["POST"]);
  });
});
