// API calls of an incremental gallery run with and without a witness's count change (issue 26, "Freshness"):
// the simulator's seeded account with its variance on (works in no folder, in two, empty folders, and each
// deleted work's lookup answering one of the ways public clients allow: docs/service-behaviour.md#deleted-deviation-lookup),
// a first sync, then one incremental run per scenario: nothing changed; a work deleted deep in a folder (its
// size drops); one deleted in no folder deep in the "all" view (only the profile's count says so); one near the
// top of the "all" view; three in three folders. Calls come from the simulator's request log. The freshness
// check's own calls are the lookups (/deviation/{deviationid}) and the /deviation/metadata calls that asked about
// works no listing of the run showed (each listing request of the run is replayed against the unchanged simulator
// to know what it showed); the rest is the walk an incremental run makes anyway. Goal: ≤ ⌈live works ÷ 50⌉ + ids the
// batches left out + 2, and 0 when nothing changed. Writes docs/PERFORMANCE.md section "freshness" unless --no-docs.
//
//   node --import tsx bench/freshness.ts [--deviations 1000] [--seed 9] [--no-docs]
import { parseArgs } from "node:util";
import got from "got";
import type { RequestLogEntry } from "../src/simulator/server.ts";
import { runSource, type RunSourceResult } from "../src/sync/run-source.ts";
import type { SourceName } from "../src/sync/source.ts";
import { gallerySource } from "../src/sync/sources/gallery.ts";
import { profileSource } from "../src/sync/sources/profile.ts";
import { createBenchEnv, isApiEntry, lastSeq, machine, table, writeDocSection, type BenchEnv } from "./bench-env.ts";

const { values: args } = parseArgs({
  options: { deviations: { type: "string", default: "1000" }, seed: { type: "string", default: "9" }, "no-docs": { type: "boolean", default: false } },
});
const DEVIATIONS = Number(args.deviations);
const SEED = Number(args.seed);
const SOURCES = new Map([profileSource, gallerySource].map((s) => [s.name, s]));

type Measured = { result: RunSourceResult; entries: RequestLogEntry[] };

async function run(env: BenchEnv, source: SourceName): Promise<Measured> {
  env.sim.clock.advance(60_000);
  const seq = lastSeq(env.sim);
  const result = await runSource({ accountId: env.accountId, source }, { services: env.services, sources: SOURCES });
  return { result, entries: env.sim.log().filter((e) => e.seq > seq && isApiEntry(e)) };
}

/** The ids a logged listing request showed, asked again of the (unchanged) simulator. */
async function listed(env: BenchEnv, token: string, entries: RequestLogEntry[]): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const e of entries.filter((x) => /\/gallery\/(all|\{folderid\})$/.test(x.route))) {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(e.query)) for (const one of [v].flat()) search.append(k, one);
    const body = await got(`${env.sim.url}${e.path}?${search}`, { headers: { authorization: `Bearer ${token}` } }).json<{
      results?: Array<{ deviationid: string }>;
    }>();
    for (const d of body.results ?? []) ids.add(d.deviationid);
  }
  return ids;
}

function liveWorks(env: BenchEnv): string[] {
  const t = env.sim.truth;
  const ids = [...t.galleryFolders.filter((f) => f.ownerId === t.ownerId).flatMap((f) => f.deviationIds), ...(t.unfiled.get(t.ownerId) ?? [])];
  return [...new Set(ids)].filter((id) => t.deviations.get(id)?.isDeleted === false);
}

async function main(): Promise<void> {
  const env = await createBenchEnv({ sim: { seed: SEED, variance: true, dataset: { deviations: DEVIATIONS, galleryFolders: 8 } } });
  const token = env.sim.issueUserToken().access_token;
  const t = env.sim.truth;
  const live = (ids: readonly string[]) => ids.filter((id) => t.deviations.get(id)?.isDeleted === false);
  const folders = () => t.galleryFolders.filter((f) => f.ownerId === t.ownerId).sort((a, b) => live(b.deviationIds).length - live(a.deviationIds).length);
  const unfiled = () => live(t.unfiled.get(t.ownerId) ?? []);
  const rows: Array<Array<string | number>> = [];
  const lines: string[] = [];
  let allWithin = true;
  try {
    await run(env, "profile");
    const first = await run(env, "gallery");
    if (!first.result.full) throw new Error("the first gallery run was not a sweep");

    const scenarios: Array<{ what: string; change: () => string[]; profileFirst?: boolean }> = [
      { what: "nothing changed", change: () => [] },
      { what: "one work deleted deep in a folder (its size drops)", change: () => [live(folders()[0]?.deviationIds ?? []).at(-30) as string] },
      {
        what: "one work in no folder deleted deep in the 'all' view (the profile's count drops)",
        change: () => [unfiled().at(-1) as string],
        profileFirst: true,
      },
      { what: "one work deleted on the 'all' view's first page", change: () => [liveWorks(env).sort((a, b) => byTime(t.deviations, b, a))[3] as string] },
      {
        what: "three works deleted in three folders",
        change: () =>
          folders()
            .slice(0, 3)
            .map((f) => live(f.deviationIds).at(-5) as string),
      },
    ];
    for (const s of scenarios) {
      const n = liveWorks(env).length;
      const deleted = s.change();
      for (const id of deleted) env.sim.activity({ kind: "delete_deviation", deviationid: id });
      const profileCalls = s.profileFirst ? (await run(env, "profile")).entries.length : 0;
      const { result, entries } = await run(env, "gallery");
      const shown = await listed(env, token, entries);
      const lookups = entries.filter((e) => e.route.endsWith("/deviation/{deviationid}")).length;
      const checkBatches = entries.filter(
        (e) => e.route.endsWith("/deviation/metadata") && [e.query["deviationids[]"] ?? []].flat().some((id) => !shown.has(id)),
      ).length;
      const check = lookups + checkBatches;
      const budget = deleted.length === 0 ? 0 : Math.ceil(n / 50) + lookups + 2;
      const marked = (
        await env.services.pool.query<{ reason: string }>("SELECT removed_reason::text AS reason FROM deviations WHERE deviationid = ANY($1)", [deleted])
      ).rows;
      const within = check <= budget && marked.length === deleted.length && marked.every((r) => r.reason === "deleted" || r.reason === "unavailable");
      allWithin &&= within;
      rows.push([
        s.what,
        n,
        entries.length,
        entries.length - check,
        `${checkBatches} + ${lookups}`,
        check,
        budget,
        deleted.length === 0 ? "–" : `${marked.length} of ${deleted.length} (${marked.map((r) => r.reason).join(", ")})`,
        profileCalls,
        within ? "ok" : "MISSED",
      ]);
      if (result.status !== "ok") lines.push(`${s.what}: the run ended ${result.status} (${result.reason ?? ""})`);
    }
  } finally {
    await env.close();
  }
  const body = [
    '<a id="freshness"></a>',
    "",
    "## Freshness: calls of an incremental run with and without a count change",
    "",
    `Machine: ${machine()}. Run ${new Date().toISOString()}.`,
    "",
    `Command: \`node --import tsx bench/freshness.ts --deviations ${DEVIATIONS} --seed ${SEED}\``,
    "",
    "The simulator's seeded account with its variance on (works in no folder and in two, empty folders, each deleted work's",
    "lookup answering error_code 0, 1, 2, none or the stub: docs/service-behaviour.md#deleted-deviation-lookup), a first",
    "sync of the profile and the gallery, then per scenario the works deleted upstream and one incremental gallery run",
    "(`runSource`, as `dvault sync --once` runs it; the profile source first where its count is the witness, its call",
    "counted apart). The check's calls are the lookups and the `/deviation/metadata` calls that asked about works no",
    "listing of the run showed (each listing request replayed against the unchanged simulator); the walk is what an",
    "incremental run makes anyway when a folder changed (its pages down to the first unchanged one, and their metadata).",
    "Goal (issue 26): the deletion marked in this run, at ≤ ⌈live works ÷ 50⌉ + ids the batches left out + 2 check calls;",
    "0 when nothing changed.",
    "",
    table(
      ["scenario", "live works", "run's API calls", "of which the walk", "check: metadata + lookups", "check calls", "goal ≤", "marked", "profile run", "goal"],
      rows,
    ),
    "",
    ...lines,
    allWithin ? "Every scenario within its goal." : "**A scenario missed its goal.**",
  ].join("\n");
  process.stdout.write(`${body}\n`);
  if (!args["no-docs"]) await writeDocSection("freshness", body);
  process.exitCode = allWithin ? 0 : 1;
}

function byTime(devs: ReadonlyMap<string, { readonly publishedTime: number }>, a: string, b: string): number {
  return (devs.get(a)?.publishedTime ?? 0) - (devs.get(b)?.publishedTime ?? 0);
}

await main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
