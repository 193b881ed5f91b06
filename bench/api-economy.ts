// API calls spent by a first full sync of a seeded account, per source, against the minimum the paging
// sizes allow; then a no-change incremental sync. The simulator draws the service's variance (deviations in
// no folder, empty folders, gone artists: docs/service-behaviour.md#folders-optional). Every request is
// taken from the simulator's log. For the gallery and collections the minimum comes from the ground truth,
// not from the listings dvault chose to make: one pass over the "all" view, one over each non-empty folder,
// the folder list, ceil(distinct ids / 50) metadata calls, and the calls that exist once per item or run. For the
// other sources it is computed from what each listing returned (each logged listing request is replayed once
// against the unchanged simulator to count its items): ceil(items / max limit) per listing, and the same.
// Then a second simulator: the gallery and then the collections archived end to end (sync, then every file
// through `runDownloadsOnce`, as `dvault sync --once && dvault download --once` do), counting API calls per
// stored item against the paging minimum plus one `/deviation/download` per original and one
// `/deviation/content` per text (issue #16: no call that the listing made unnecessary).
// Run: node --import tsx bench/api-economy.ts [--deviations 3000] [--archive-deviations 300] [--no-docs]
import { parseArgs } from "node:util";
import { downloadDepsFor } from "../src/downloads/deps.ts";
import { runDownloadsOnce } from "../src/downloads/run-once.ts";
import { createLogger } from "../src/log.ts";
import { runSource, type RunSourceResult } from "../src/sync/run-source.ts";
import { SOURCES } from "../src/sync/sources/index.ts";
import { pagingMinimum } from "../test/helpers/paging-minimum.ts";
import { economyOf, OPS, type Economy } from "./call-economy.ts";
import { API_ROUTE_PREFIX, createBenchEnv, isApiEntry, lastSeq, machine, table, writeDocSection, type BenchEnv } from "./bench-env.ts";

const { values: args } = parseArgs({
  options: {
    deviations: { type: "string", default: "3000" },
    "archive-deviations": { type: "string", default: "300" },
    "no-docs": { type: "boolean", default: false },
  },
});
const DEVIATIONS = Number(args.deviations);
const ARCHIVE_DEVIATIONS = Number(args["archive-deviations"]);
type ArchiveRow = { source: string; stored: number; originals: number; texts: number; calls: number; min: number; lookups: number; ops: string };

/** Files stored so far: all of them, originals, texts. */
async function storedCounts(env: BenchEnv): Promise<{ stored: number; originals: number; texts: number }> {
  const { rows } = await env.services.pool.query<{ stored: number; originals: number; texts: number }>(
    `SELECT count(*)::int AS stored, count(*) FILTER (WHERE rendition = 'original')::int AS originals,
            count(*) FILTER (WHERE rendition = 'html')::int AS texts
       FROM downloads WHERE path IS NOT NULL AND status IN ('done', 'degraded', 'not_downloadable')`,
  );
  return rows[0] ?? { stored: 0, originals: 0, texts: 0 };
}

/**
 * The sources archived end to end, one after the other, on a simulator of their own: sync, then every file.
 * The minimum is the paging minimum from the ground truth plus the calls that exist once per stored file:
 * `/deviation/download` per original, `/deviation/content` per text. `allowance`: the weekly originals (a free
 * account has 10; the rest are stored as free renditions, degraded until the next week).
 */
async function archiveEconomy(opts: { allowance: number; sources: ReadonlyArray<"gallery" | "collections">; label?: string }): Promise<ArchiveRow[]> {
  const env = await createBenchEnv({
    sim: { seed: 9, variance: true, downloadQuota: opts.allowance, dataset: { deviations: ARCHIVE_DEVIATIONS } },
    configExtra: { DVAULT_DOWNLOAD_QUOTA: String(opts.allowance) },
  });
  try {
    const sources = new Map(SOURCES.map((s) => [s.name, s]));
    const deps = downloadDepsFor(env.services);
    const log = createLogger({ level: "silent" });
    const rows: ArchiveRow[] = [];
    for (const source of opts.sources) {
      const from = lastSeq(env.sim);
      const before = await storedCounts(env);
      await runSource({ accountId: env.accountId, source, full: true }, { services: env.services, sources });
      const summary = await runDownloadsOnce({ services: env.services, deps, log, progressEveryMs: 3_600_000 });
      if (summary.failures.length > 0) throw new Error(`${source}: ${summary.failures.length} downloads failed`);
      const after = await storedCounts(env);
      const entries = env.sim.log().filter((e) => e.seq > from && isApiEntry(e));
      const ops = new Map<string, number>();
      for (const e of entries) {
        const name = OPS.get(`${e.method} ${e.route}`)?.id ?? e.route.slice(API_ROUTE_PREFIX.length);
        ops.set(name, (ops.get(name) ?? 0) + 1);
      }
      const paging = pagingMinimum(env.sim.truth, source);
      const originals = after.originals - before.originals;
      const texts = after.texts - before.texts;
      rows.push({
        source: opts.label ? `${source}, ${opts.label}` : source,
        stored: after.stored - before.stored,
        originals,
        texts,
        calls: entries.length,
        min: paging.listing + paging.metadata + originals + texts,
        lookups: ops.get("deviation.get") ?? 0,
        ops: [...ops].map(([k, v]) => `${k} ×${v}`).join(", "),
      });
    }
    return rows;
  } finally {
    await env.close();
  }
}

const ratio = (a: number, b: number) => (b === 0 ? (a === 0 ? "1.00" : "∞") : (a / b).toFixed(2));

async function main(): Promise<void> {
  const started = Date.now();
  const env = await createBenchEnv({ sim: { seed: 9, variance: true, dataset: { deviations: DEVIATIONS } } });
  try {
    const sources = new Map(SOURCES.map((s) => [s.name, s]));
    const replayToken = env.sim.issueUserToken().access_token;
    const run = async (name: (typeof SOURCES)[number]["name"], full: boolean) => {
      const from = lastSeq(env.sim);
      const result: RunSourceResult = await runSource({ accountId: env.accountId, source: name, full }, { services: env.services, sources });
      const entries = env.sim.log().filter((e) => e.seq > from && isApiEntry(e));
      return { result, entries };
    };

    // 1. First full sync, every source in registry order (tracked users have no rows yet: nothing to track).
    const firstRows: Array<Array<string | number>> = [];
    const firstRuns: Array<{ name: string; result: RunSourceResult; eco: Economy }> = [];
    let totals = { calls: 0, min: 0 };
    for (const source of SOURCES) {
      if (source.name === "tracked") continue;
      const { result, entries } = await run(source.name, true);
      const eco = await economyOf(env, entries, replayToken);
      if (source.name === "gallery" || source.name === "collections") {
        // The ground truth's minimum, not the listings dvault made (docs/service-behaviour.md#folders-optional).
        const truthMin = pagingMinimum(env.sim.truth, source.name);
        eco.listingMin = truthMin.listing;
        eco.metadataMin = truthMin.metadata;
        eco.min = eco.listingMin + eco.metadataMin + eco.fixedCalls;
      }
      firstRuns.push({ name: source.name, result, eco });
      totals = { calls: totals.calls + eco.calls, min: totals.min + eco.min };
      const fixed = [...eco.fixedOps].map(([k, v]) => `${k} ×${v}`).join(", ");
      firstRows.push([
        source.name,
        result.counters.new,
        eco.calls,
        `${eco.listingCalls} / ${eco.listingMin}`,
        `${eco.metadataCalls} / ${eco.metadataMin}`,
        fixed || "–",
        eco.min,
        ratio(eco.calls, eco.min),
      ]);
    }
    const deviations = (await env.services.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviations")).rows[0]?.n ?? 0;
    firstRows.push(["**total**", "", totals.calls, "", "", "", totals.min, `**${ratio(totals.calls, totals.min)}**`]);
    const folderRuns = firstRuns.filter((r) => r.name === "gallery" || r.name === "collections");
    const folderCalls = folderRuns.reduce((n, r) => n + r.eco.listingCalls + r.eco.metadataCalls, 0);
    const folderMin = folderRuns.reduce((n, r) => n + r.eco.listingMin + r.eco.metadataMin, 0);

    // 2. The same sync again with nothing changed on the service: incremental runs.
    const incRows: Array<Array<string | number>> = [];
    let incMax = 0;
    for (const source of SOURCES) {
      if (source.name === "tracked") continue;
      const { result, entries } = await run(source.name, false);
      const ops = new Map<string, number>();
      for (const e of entries) {
        const name = OPS.get(`${e.method} ${e.route}`)?.id ?? e.route;
        ops.set(name, (ops.get(name) ?? 0) + 1);
      }
      incMax = Math.max(incMax, entries.length);
      incRows.push([
        source.name,
        entries.length,
        result.apiCalls,
        [...ops].map(([k, v]) => `${k} ×${v}`).join(", ") || "–",
        entries.length <= 2 ? "ok" : "**over**",
      ]);
    }

    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    const first = table(
      [
        "source",
        "new rows",
        "API calls",
        "listing calls / min",
        "metadata calls / min",
        "calls needed once per item or run (in the min)",
        "minimum",
        "calls / min",
      ],
      firstRows,
    );
    const inc = table(["source", "API calls (sim log)", "API calls (runner)", "operations", "≤ 2"], incRows);
    const summary =
      `First full sync of ${deviations} deviations: ${totals.calls} API calls, ${(totals.calls / Math.max(1, deviations)).toFixed(3)} per archived deviation ` +
      `(minimum ${totals.min}, ${(totals.min / Math.max(1, deviations)).toFixed(3)} per deviation). Galleries + collections listings and metadata: ${folderCalls} calls ` +
      `against a minimum of ${folderMin} (**${ratio(folderCalls, folderMin)}**, goal ≤ 1.10). No-change incremental sync: at most ${incMax} calls per source kind (goal ≤ 2).`;
    const archived =
      ARCHIVE_DEVIATIONS > 0
        ? [
            ...(await archiveEconomy({ allowance: 1_000_000, sources: ["gallery", "collections"] })),
            ...(await archiveEconomy({ allowance: 10, sources: ["gallery"], label: "allowance 10" })),
          ]
        : [];
    const perItem = (n: number, items: number) => (n / Math.max(1, items)).toFixed(2);
    const archiveTable = table(
      [
        "source",
        "stored files",
        "originals / texts",
        "API calls",
        "per stored file",
        "minimum",
        "minimum per stored file",
        "over the minimum",
        "`/deviation/{id}`",
        "operations",
      ],
      archived.map((r) => [
        r.source,
        r.stored,
        `${r.originals} / ${r.texts}`,
        r.calls,
        `**${perItem(r.calls, r.stored)}**`,
        r.min,
        perItem(r.min, r.stored),
        r.calls - r.min,
        r.lookups,
        r.ops,
      ]),
    );
    const archiveSummary = archived
      .map(
        (r) =>
          `${r.source}: ${r.calls} API calls for ${r.stored} stored files (${perItem(r.calls, r.stored)} per file; minimum ${r.min}, ${r.calls - r.min} over)`,
      )
      .join("; ");
    const archiveText = archived.length ? `\n\n### Archived end to end: calls per stored file\n\n${archiveTable}\n\n${archiveSummary}.` : "";
    process.stdout.write(`\n## API economy\n\n${first}\n\n${summary}\n\n### No-change incremental sync\n\n${inc}${archiveText}\n\n(${seconds} s)\n`);
    if (!args["no-docs"]) {
      await writeDocSection(
        "api-economy",
        [
          "## API economy: calls per archived deviation against the paging minimum",
          "",
          `Machine: ${machine()}. Run ${new Date().toISOString()}, ${seconds} s.`,
          "",
          `Command: \`node --import tsx bench/api-economy.ts --deviations ${DEVIATIONS}\` (part of \`npm run bench\`)`,
          "",
          `A first full sync of the simulator's seeded account (seed 9, ${DEVIATIONS} deviations of the owner, default sizes for the rest),`,
          "with the simulator's variance on (15–30 % of the gallery in no folder, some in two, empty folders, gone artists:",
          "docs/service-behaviour.md#folders-optional), every source through the real runner (`runSource`, as the worker's",
          "`sync.source` job does), then each source again with nothing changed. Calls are counted from the simulator's request",
          "log. For the gallery and collections the minimum is computed from the ground truth, not from the listings dvault",
          'chose to make: the folder list, one pass over the "all" view and one over each non-empty folder (pages of 24),',
          "ceil(live ids / 50) `/deviation/metadata` calls, plus the calls that exist once per item or run. For the other sources",
          "it is computed from what each listing returned: each logged listing request is replayed once against the unchanged",
          "simulator to count its items; per listing ceil(items / the operation's max limit in src/api/catalogue.ts), plus",
          "ceil(distinct ids / 50) metadata calls, plus the calls that exist once per item (`/deviation/content` for each literature or",
          "journal, comments of each deviation) or once per run (profile, whoami) — those count at their observed number.",
          "",
          first,
          "",
          summary,
          "",
          "### No-change incremental sync",
          "",
          inc,
          ...(archived.length
            ? [
                "",
                "### Archived end to end: calls per stored file",
                "",
                `A second simulator (seed 9, variance on, ${ARCHIVE_DEVIATIONS} deviations of the owner, weekly allowance unlimited): the`,
                "gallery synced and every file it wants stored (`runSource`, then `runDownloadsOnce`, as `dvault sync --once && dvault",
                "download --once` do), then the collections the same way (files the gallery already stored are not stored twice);",
                "then the gallery again on a third simulator with a free account's allowance of 10 originals a week (the other",
                "originals stored as free renditions, degraded until the next week).",
                "The minimum is the paging minimum from the ground truth (above) plus the calls that exist once per stored file: one",
                "`/deviation/download` per original and one `/deviation/content` per text. A free rendition of an item that is not",
                "downloadable comes from the listing's copy while its signed URL holds (docs/service-behaviour.md#signed-url-expiry);",
                "`/deviation/{id}` is left for locked works (their view depends on the viewer) and for what the download call refused. What is left",
                "over the minimum: the placebo before a long sync, those lookups, and the originals a download call asked for and was",
                "refused (subscribers only: docs/service-behaviour.md#tier-locked).",
                "",
                archiveTable,
                "",
                `${archiveSummary}.`,
              ]
            : []),
        ].join("\n"),
      );
    }
  } finally {
    await env.close();
  }
}

await main();
