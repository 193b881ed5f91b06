// The simulator for bench/downloads.ts, in its own process so it does not share a core with the
// downloader being measured. Prints one JSON line: its URL, the ids of the benchmark's files and a user
// token; then serves until SIGTERM. Sizes in bytes: DL_BENCH_SIZES="<n>,<n>,..."
import { startSimulator } from "../src/simulator/server.ts";
import { downloadableOwnerDeviations, generateDataset } from "../src/simulator/dataset.ts";

const sizes = (process.env.DL_BENCH_SIZES ?? "").split(",").filter(Boolean).map(Number);
const dataset = { deviations: 30, galleryFolders: 1, collectionFolders: 1, favourites: 0, trackedUsers: 0 };
const start = new Date();
const ids = downloadableOwnerDeviations(generateDataset(1, dataset, start))
  .slice(0, sizes.length)
  .map((d) => d.deviationid);
const sim = await startSimulator({
  dataset,
  startTime: start,
  clockMode: "real",
  downloadQuota: 100_000,
  fileSizes: Object.fromEntries(ids.map((id, i) => [id, sizes[i] as number])),
  logLimit: 1000,
});
const token = sim.issueUserToken().access_token;
process.stdout.write(`${JSON.stringify({ url: sim.url, ids, token })}\n`);
await new Promise<void>((resolve) => {
  process.once("SIGTERM", () => resolve());
  process.once("SIGINT", () => resolve());
});
await sim.close();
