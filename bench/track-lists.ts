// `dvault track import|export` on large lists: parsing an OPML file of N users, adding them (one transaction,
// batched INSERTs: src/track-lists/import-list.ts), importing the same file again (everything skipped) and
// writing the OPML export, on a migrated scratch database. Each size runs 3 times into a fresh account; the
// median is reported. Goal: 500 users imported in well under a second, so a reader's export is never a wait.
// Writes docs/PERFORMANCE.md section "track-lists" unless --no-docs.
//
//   node --import tsx bench/track-lists.ts [--sizes 500,5000] [--no-docs]
import { parseArgs } from "node:util";
import type { AccountRow } from "../src/db/account.repository.ts";
import { TrackedUserRepository } from "../src/db/tracked-user.repository.ts";
import { formatTrackList } from "../src/track-lists/format.ts";
import { importTrackList } from "../src/track-lists/import-list.ts";
import { parseTrackList } from "../src/track-lists/parse.ts";
import { rssUrl } from "../src/track-lists/username.ts";
import { createBenchEnv, machine, median, table, writeDocSection } from "./bench-env.ts";

const { values: args } = parseArgs({ options: { sizes: { type: "string", default: "500,5000" }, "no-docs": { type: "boolean", default: false } } });
const SIZES = args.sizes.split(",").map(Number);
const RUNS = 3;

function opml(n: number): string {
  const outlines = Array.from({ length: n }, (_, i) => {
    const u = `bench-user-${i}`;
    return `<outline type="rss" text="${u}" xmlUrl="${rssUrl(u).replaceAll("&", "&amp;")}" htmlUrl="https://www.deviantart.com/${u}"/>`;
  });
  return `<?xml version="1.0"?><opml version="2.0"><head><title>bench</title></head><body>${outlines.join("\n")}</body></opml>`;
}

async function main(): Promise<void> {
  const bench = await createBenchEnv({ sim: { seed: 5, dataset: { deviations: 1 } } });
  const rows: Array<Array<string | number>> = [];
  try {
    for (const n of SIZES) {
      const text = opml(n);
      const times = { parse: [] as number[], first: [] as number[], again: [] as number[], exported: [] as number[] };
      for (let run = 0; run < RUNS; run++) {
        const { rows: inserted } = await bench.services.pool.query<{ id: number; name: string }>(
          "INSERT INTO accounts (name, username, updated_at) VALUES ($1, $1, now()) RETURNING id, name",
          [`bench-${n}-${run}`],
        );
        const account = inserted[0] as AccountRow;
        const options = { pool: bench.services.pool, accounts: [account], forcedAccount: account, defaultAccount: async () => account, dryRun: false };
        let t = performance.now();
        const list = parseTrackList("bench.opml", text);
        times.parse.push(performance.now() - t);
        t = performance.now();
        const first = await importTrackList({ ...options, list, at: new Date() });
        times.first.push(performance.now() - t);
        const list2 = parseTrackList("bench.opml", text);
        t = performance.now();
        const again = await importTrackList({ ...options, list: list2, at: new Date() });
        times.again.push(performance.now() - t);
        if (first.counts.added !== n || again.counts.skipped !== n)
          throw new Error(`expected ${n} added then skipped, got ${first.counts.added} and ${again.counts.skipped}`);
        t = performance.now();
        const users = (await new TrackedUserRepository(bench.services.pool).listTrackedUsers(account.id)).map((u) => ({ ...u, account: account.name }));
        formatTrackList("opml", users, new Date());
        times.exported.push(performance.now() - t);
      }
      const ms = (xs: number[]) => Math.round(median(xs));
      rows.push([n, ms(times.parse), ms(times.first), ms(times.again), ms(times.exported)]);
    }
  } finally {
    await bench.close();
  }
  const header = ["users", "parse OPML (ms)", "import (ms)", "import again, all skipped (ms)", "export OPML (ms)"];
  const body = [
    "### Track lists: `dvault track import|export`",
    "",
    `Median of ${RUNS} runs per size, each into a fresh account; times in the process, without the command's start-up (see the startup section). Machine: ${machine()}.`,
    "",
    table(header, rows),
    "",
    "Run: `node --import tsx bench/track-lists.ts`.",
  ].join("\n");
  process.stdout.write(`${body}\n`);
  if (!args["no-docs"]) await writeDocSection("track-lists", body);
}

await main();
