// Child process for the pacer tests: takes a permit on a key and never releases it, so the test can kill
// it (SIGKILL) and check that other processes are stalled no longer than the lock TTL.
// Usage: node --import tsx test/helpers/pacer-holder.ts <redis|postgres> <url> <namespace> <key> <lockTtlMs>
import { createPacer } from "../../src/api/pacer.ts";
import { childPacerStore } from "./pacer-child-store.ts";

const [engine, url, namespace, key, lockTtlMs] = process.argv.slice(2);
if (!engine || !url || !namespace || !key || !lockTtlMs) throw new Error("usage: pacer-holder <redis|postgres> <url> <namespace> <key> <lockTtlMs>");
const pacer = createPacer({ store: await childPacerStore(engine, url, namespace), lockTtlMs: Number(lockTtlMs) });
const permit = await pacer.acquire(key, { maxWaitMs: 10_000 });
process.stdout.write(`${JSON.stringify({ acquiredAt: permit.acquiredAt })}\n`);
// Hold the permit until killed.
setInterval(() => undefined, 60_000);
