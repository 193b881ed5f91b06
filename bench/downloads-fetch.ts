// One download for bench/downloads.ts, in its own process so its CPU time and memory are its own:
// dvault's transfer path (got stream → Archive.storeStream: sha256 on the way, fsync, atomic rename),
// or the same archive sink fed by Node's fetch (undici) or bare node:http, for comparison.
// Args: <url> <archive dir> <expected size> <got|fetch|http>. Prints one JSON line.
import http from "node:http";
import { Readable } from "node:stream";
import { transferToArchive } from "../src/downloads/transfer.ts";
import { createLogger } from "../src/log.ts";
import { Archive } from "../src/storage/archive.ts";

const [url, dir, sizeArg, client = "got"] = process.argv.slice(2);
if (!url || !dir || !sizeArg) throw new Error("usage: downloads-fetch.ts <url> <dir> <size> [got|fetch|http]");
const size = Number(sizeArg);
const archive = new Archive({ root: dir, minFreeBytes: 0 });
const log = createLogger({ level: "warn", pretty: false });

// Idle: everything loaded, a first tiny store done (folders made), garbage collected.
await archive.storeBytes({ bytes: Buffer.from("warm-up"), ext: "txt" });
(globalThis as { gc?: () => void }).gc?.();
await new Promise((r) => setTimeout(r, 200));
const idleRss = process.memoryUsage().rss;
let peakRss = idleRss;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);

const cpu0 = process.cpuUsage();
const t0 = performance.now();
let stored: { sha256: string; size: number };
if (client === "got") {
  stored = await transferToArchive({ archive, key: "bench-file", url, ext: () => "bin", announcedSize: size, log });
} else if (client === "fetch") {
  const res = await fetch(url, { headers: { "accept-encoding": "identity" } });
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
  stored = await archive.storeStream({
    key: "bench-file",
    body: Readable.fromWeb(res.body as import("node:stream/web").ReadableStream<Uint8Array>),
    ext: "bin",
    expectedSize: size,
  });
} else {
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => http.get(url, resolve).on("error", reject));
  if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`);
  stored = await archive.storeStream({ key: "bench-file", body: res, ext: "bin", expectedSize: size });
}
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
clearInterval(sampler);
peakRss = Math.max(peakRss, process.memoryUsage().rss);
process.stdout.write(
  `${JSON.stringify({ client, ms, bytes: stored.size, sha256: stored.sha256, cpuUserMs: cpu.user / 1000, cpuSysMs: cpu.system / 1000, idleRss, peakRss })}\n`,
);
