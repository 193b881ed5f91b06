// The route gate (src/http/route-gate.ts) in front of a handler that holds each request until the test lets it
// go, over a real socket: a route runs `limit` at once, queues `queue` more in order, answers 503 with
// Retry-After past the queue or past the wait, forgets a client that hung up while waiting, and keeps each
// route's turns to itself.
import http from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { createRouteGate } from "../../src/http/route-gate.ts";
import { rawRequest } from "../helpers/dashboard-request.ts";

type Held = { path: string; release: () => void };

async function gatedServer(options: { limit: number; queue: number; maxWaitMs: number }) {
  const gate = createRouteGate(options);
  const held: Held[] = [];
  const app = express();
  app.use(gate.middleware);
  app.get(/.*/, (req, res) => {
    held.push({ path: req.path, release: () => res.send(`done ${req.path}\n`) });
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { gate, held, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

type Got = { status: number; retryAfter: string | undefined; text: string };

async function get(url: string, signal?: AbortSignal): Promise<Got> {
  const a = await rawRequest(url, signal ? { signal } : {});
  return { status: a.status, retryAfter: a.headers["retry-after"] as string | undefined, text: a.text };
}

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup) await c();
  cleanup = [];
});

describe(createRouteGate.name, () => {
  it("runs `limit` at once, queues `queue` in order, and answers 503 with Retry-After past the queue", async () => {
    const s = await gatedServer({ limit: 2, queue: 2, maxWaitMs: 60_000 });
    cleanup.push(s.close);
    const answers = ["/a/1", "/a/2", "/a/3", "/a/4"].map((p) => get(`${s.url}${p}`));
    await expect.poll(() => s.gate.state().a).toEqual({ active: 2, waiting: 2 });
    const refused = await get(`${s.url}/a/5`);
    expect(refused.status).toBe(503);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(refused.text).toMatch(/^dvault: the dashboard is busy \(2 requests of this page run and 2 wait\); try again in \d+ s\n$/);
    expect(s.held.map((h) => h.path)).toEqual(["/a/1", "/a/2"]);
    s.held[0]!.release();
    await expect.poll(() => s.held.map((h) => h.path)).toEqual(["/a/1", "/a/2", "/a/3"]);
    for (const h of s.held.slice(1)) h.release();
    await expect.poll(() => s.held.length).toBe(4);
    s.held[3]!.release();
    expect((await Promise.all(answers)).map((a) => a.text)).toEqual(["done /a/1\n", "done /a/2\n", "done /a/3\n", "done /a/4\n"]);
    expect(s.gate.state().a).toEqual({ active: 0, waiting: 0 });
  });

  it("answers 503 to a request that waited past maxWaitMs, and forgets one whose client hung up", async () => {
    const s = await gatedServer({ limit: 1, queue: 5, maxWaitMs: 300 });
    cleanup.push(s.close);
    const first = get(`${s.url}/b/1`);
    await expect.poll(() => s.held.length).toBe(1);
    const late = await get(`${s.url}/b/2`);
    expect(late.status).toBe(503);
    expect(late.text).toMatch(/^dvault: the dashboard is busy \(no turn within 300 ms\); try again in \d+ s\n$/);
    const leaving = new AbortController();
    const gone = get(`${s.url}/b/3`, leaving.signal).catch((err: Error) => err.name);
    await expect.poll(() => s.gate.state().b?.waiting).toBe(1);
    leaving.abort();
    expect(await gone).toBe("AbortError");
    await expect.poll(() => s.gate.state().b?.waiting).toBe(0);
    s.held[0]!.release();
    expect((await first).status).toBe(200);
    expect(s.held.map((h) => h.path)).toEqual(["/b/1"]);
  });

  it("keeps each route's turns to itself", async () => {
    const s = await gatedServer({ limit: 1, queue: 0, maxWaitMs: 1000 });
    cleanup.push(s.close);
    const archive = get(`${s.url}/archive`);
    await expect.poll(() => s.held.length).toBe(1);
    expect((await get(`${s.url}/archive`)).status).toBe(503);
    const health = get(`${s.url}/healthz`);
    await expect.poll(() => s.held.map((h) => h.path)).toEqual(["/archive", "/healthz"]);
    for (const h of s.held) h.release();
    expect([(await archive).status, (await health).status]).toEqual([200, 200]);
  });
});

describe("the dashboard's load settings", () => {
  it("default to 16 at once, 256 waiting for 15 s, and a pool of 7; a bad value is one line", () => {
    const config = loadConfig({});
    expect(config.httpLoad).toEqual({ concurrency: 16, queue: 256, queueWaitMs: 15_000 });
    expect(config.dbPoolSize).toBe(7);
    expect(loadConfig({ DVAULT_HTTP_QUEUE_WAIT: "2min", DVAULT_DB_POOL_SIZE: "20" })).toMatchObject({ httpLoad: { queueWaitMs: 120_000 }, dbPoolSize: 20 });
    expect(() => loadConfig({ DVAULT_HTTP_CONCURRENCY: "0", DVAULT_DB_POOL_SIZE: "1" })).toThrow(
      /DVAULT_HTTP_CONCURRENCY expects 1 to 256 requests of one page at once; DVAULT_DB_POOL_SIZE expects 2 to 1000 connections/,
    );
  });
});
