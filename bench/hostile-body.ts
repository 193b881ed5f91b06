// Memory under an endless API answer (docs/service-behaviour.md#hostile-answers): the real transport
// (createHttpTransport, default 32 MiB byte cap) reads from a local server that answers 200 with spaces and
// no Content-Length until the client hangs up. The process's RSS is sampled every 10 ms during the reads
// and compared, in the same run, with a baseline of ordinary small answers. Goal: growth < 100 MB.
//
//   node --import tsx bench/hostile-body.ts [--reads 10] [--no-write]
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";
import { z } from "zod";
import { createHttpTransport } from "../src/api/http.ts";
import { createPacer } from "../src/api/pacer.ts";
import { redisPacerStore } from "../src/api/pacer-redis-store.ts";
import { staticTokenProvider } from "../src/api/token-provider.ts";
import { createLogger } from "../src/log.ts";
import { createRedis } from "../src/queue/redis.ts";
import { BENCH_REDIS_URL, machine, table, writeDocSection } from "./bench-env.ts";

const { values } = parseArgs({ options: { reads: { type: "string", default: "10" }, "no-write": { type: "boolean", default: false } } });
const READS = Math.max(1, Number(values.reads));
const MB = 1e6;

// The server runs in a child process, so the RSS measured here is the reader's alone.
const SERVER = `
const http = require("node:http");
const CHUNK = Buffer.alloc(64 * 1024, 0x20);
let sent = 0;
const server = http.createServer((req, res) => {
  res.writeHead(200, { "content-type": "application/json" });
  if (!req.url.includes("endless")) return res.end(JSON.stringify({ success: true }));
  let open = true;
  res.on("close", () => (open = false));
  const pump = () => {
    while (open) {
      sent += CHUNK.length;
      if (!res.write(CHUNK)) return void res.once("drain", pump);
    }
  };
  pump();
});
server.listen(0, "127.0.0.1", () => process.stdout.write(server.address().port + "\\n"));
process.on("message", () => process.send(sent));
`;
const child = spawn(process.execPath, ["-e", SERVER], { stdio: ["ignore", "pipe", "inherit", "ipc"] });
const port = await new Promise<number>((resolve) => child.stdout!.once("data", (d: Buffer) => resolve(Number(String(d).trim()))));
const base = `http://127.0.0.1:${port}`;
const sentByServer = () =>
  new Promise<number>((resolve) => {
    child.once("message", (n) => resolve(Number(n)));
    child.send("sent?");
  });

const redis = createRedis(BENCH_REDIS_URL);
const transport = createHttpTransport({
  apiBase: base,
  tokens: staticTokenProvider("bench-token", { kind: "user", clientId: "1", userId: "u", account: "bench" }),
  pacer: createPacer({ store: redisPacerStore(redis, `dvault-bench-hostile-${process.pid}`), holdMs: 5, maxHoldMs: 50 }),
  log: createLogger({ level: "silent" }),
});

/** Peak RSS growth over `run`, sampled every 10 ms, after a GC when exposed. */
async function peakGrowth(run: () => Promise<void>): Promise<{ growthMb: number; ms: number }> {
  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const started = performance.now();
  await run();
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { growthMb: (peak - before) / MB, ms: performance.now() - started };
}

const schema = z.object({ success: z.boolean() });
const ask = (path: string) => transport.request({ operation: "placebo", path, method: "GET" }, schema);

const baseline = await peakGrowth(async () => {
  for (let i = 0; i < READS * 20; i++) await ask("/placebo");
});
let refusals = 0;
const hostile = await peakGrowth(async () => {
  for (let i = 0; i < READS; i++) {
    await ask("/endless").then(
      () => undefined,
      (err: Error) => {
        if (/response too large/.test(err.message)) refusals++;
        else throw err;
      },
    );
  }
});
const endlessBytes = await sentByServer();
child.kill();
redis.disconnect();

const ok = hostile.growthMb < 100 && refusals === READS;
const rows = [
  ["ordinary answers (baseline)", `${READS * 20} reads`, baseline.growthMb.toFixed(1), "—"],
  [
    "endless answers, 32 MiB cap",
    `${READS} reads (${refusals} refused as too large; ${(endlessBytes / MB).toFixed(0)} MB sent by the server)`,
    hostile.growthMb.toFixed(1),
    (hostile.growthMb / Math.max(1, baseline.growthMb)).toFixed(1),
  ],
];
const out = table(["run", "reads", "peak RSS growth (MB)", "× baseline"], rows);
process.stdout.write(`${out}\ngoal: growth < 100 MB under an endless answer — ${ok ? "met" : "NOT MET"}\n`);
if (!values["no-write"]) {
  await writeDocSection(
    "hostile-body",
    `### Memory under an endless API answer\n\n\`node --import tsx bench/hostile-body.ts\` on ${machine()}. A server in a child process answers 200 with no Content-Length and bytes until the reader hangs up; the real transport (default 32 MiB byte cap) cuts each reading at the cap, asks twice more with backoff, then reports the answer as unreadable. The RSS of the reader is sampled every 10 ms against a baseline of ordinary answers in the same run.\n\n${out}\n\nGoal: growth < 100 MB — ${ok ? "met" : "not met"}. The growth does not add up with the number of reads: each cut reading leaves about one cap of chunks for V8's next collection, so the peak stays near two to three caps.\n`,
  );
}
process.exit(ok ? 0 : 1);
