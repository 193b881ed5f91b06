// Child process for the two-process pacer test (test/medium/pacer-processes.test.ts): a dvault process calling
// through one key of the shared pace. Says "ready" once connected, starts on "go" (stdin), then takes `permits`
// permits one after another, releasing each as a success, the last as a refusal when `refuseLast` is 1; prints
// one JSON line per permit: when it was granted and when its release was sent (both epoch ms, the real clock).
// Usage: node --import tsx test/helpers/pacer-runner.ts <redis|postgres> <url> <namespace> <key> <permits> <refuseLast> <rate> <holdMs>
import { once } from "node:events";
import { createInterface } from "node:readline";
import { createPacer } from "../../src/api/pacer.ts";
import { childPacerStore } from "./pacer-child-store.ts";

const [engine = "", url = "", namespace = "", key = "", permits, refuseLast, rate, holdMs] = process.argv.slice(2);
const pace = Number(rate);
const pacer = createPacer({
  store: await childPacerStore(engine, url, namespace),
  startRate: pace,
  minRate: pace,
  maxRate: pace,
  holdMs: Number(holdMs),
  jitter: 0,
  pollMs: 20,
});
// The schema and the key's row exist before the parent says go (status reads them).
await pacer.status(key);
process.stdout.write("ready\n");
await once(createInterface({ input: process.stdin }), "line");
const n = Number(permits);
for (let i = 0; i < n; i++) {
  const permit = await pacer.acquire(key, { maxWaitMs: 60_000 });
  const refused = refuseLast === "1" && i === n - 1;
  const releasedAt = Date.now();
  await permit.release(refused ? "throttled" : "success");
  process.stdout.write(`${JSON.stringify({ acquiredAt: permit.acquiredAt, releasedAt, refused })}\n`);
}
await pacer.close();
process.exit(0);
