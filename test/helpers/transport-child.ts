// Child process for the transport tests: a second dvault process that shares the pacer (on the test's engine,
// test/helpers/pacer-child-store.ts) with the test. It prints "ready", waits for a line on stdin, sends `count` requests through its own transport
// and prints one JSON summary line.
// Usage: node --import tsx test/helpers/transport-child.ts '<json ChildConfig>'
import { createInterface } from "node:readline";
import { once } from "node:events";
import { z } from "zod";
import { createHttpTransport } from "../../src/api/http.ts";
import { createPacer } from "../../src/api/pacer.ts";
import { staticTokenProvider, type TokenIdentity } from "../../src/api/token-provider.ts";
import { createLogger } from "../../src/log.ts";
import { childPacerStore } from "./pacer-child-store.ts";
import type { PacerEngine } from "./pacer-stores.ts";

export type ChildConfig = {
  apiBase: string;
  token: string;
  identity: TokenIdentity;
  engine: PacerEngine;
  url: string;
  prefix: string;
  holdMs: number;
  path: string;
  /** Sent with every request, so the simulator's log tells the processes apart. */
  query: Record<string, string>;
  count: number;
};

const config = JSON.parse(process.argv[2] ?? "{}") as ChildConfig;
const store = await childPacerStore(config.engine, config.url, config.prefix);
const pacer = createPacer({ store, holdMs: config.holdMs, jitter: 0, startRate: 1000, maxRate: 1000, pollMs: 5 });
const transport = createHttpTransport({
  apiBase: config.apiBase,
  tokens: staticTokenProvider(config.token, config.identity),
  pacer,
  log: createLogger({ level: "silent" }),
  maxWaitMs: 30_000,
});

process.stdout.write("ready\n");
await once(createInterface({ input: process.stdin }), "line");
let ok = 0;
const errors: string[] = [];
for (let i = 0; i < config.count; i++) {
  try {
    await transport.request({ operation: "child.call", method: "GET", path: config.path, query: config.query }, z.looseObject({}));
    ok++;
  } catch (err) {
    errors.push(err instanceof Error ? err.message : String(err));
  }
}
process.stdout.write(`${JSON.stringify({ ok, errors, stats: transport.stats })}\n`);
await store.close();
// The PostgreSQL store's pool is the child's own: it ends with the process.
process.exit(0);
