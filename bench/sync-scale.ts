// The first sync of a large account, as a person runs it: `dvault sync --once` in a process of its own against
// the simulator (seed 9) holding an account of --works works (its gallery over folders of fewer than 10 000
// each, its favourites in collections, and the galleries of --artists tracked artists, whose new works fill
// the watch feed), with those artists tracked (as `dvault track import` stores them). The pace is off
// (DVAULT_API_RATE_START = MAX = 1 000 000 per second), so the run is bounded by dvault itself. Measured: the
// API calls (the simulator's request log) against the paging minimum (bench/call-economy.ts: every listing
// replayed to count its items), wall time, and the peak RSS of the dvault process (VmHWM from
// /proc/<pid>/status, read every 100 ms). Goals (issue #32): calls ≤ 1.10 × the minimum, peak RSS < 300 MB.
// Run: node --import tsx bench/sync-scale.ts [--works 50000] [--artists 500] [--no-docs]
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { distIsCurrent } from "../bin/dist-current.js";
import { importTrackList } from "../src/track-lists/import-list.ts";
import { parseTrackList } from "../src/track-lists/parse.ts";
import { METADATA_BATCH } from "../test/helpers/paging-minimum.ts";
import { benchEnvVars, createBenchEnv, isApiEntry, lastSeq, machine, table, writeDocSection } from "./bench-env.ts";
import { economyOf, OPS } from "./call-economy.ts";

const { values: args } = parseArgs({
  options: {
    works: { type: "string", default: "50000" },
    artists: { type: "string", default: "500" },
    "no-docs": { type: "boolean", default: false },
  },
});
const WORKS = Number(args.works);
const ARTISTS = Number(args.artists);
/** Works in each tracked artist's gallery. */
const PER_ARTIST = 8;
/** A gallery folder's size stays under the offset ceiling (docs/service-behaviour.md#offset-ceiling), so the gallery is complete. */
const FOLDER_SIZE = 4000;
/** The favourites share of the account's own works; all of them sit in the first collection, kept under the ceiling too. */
const FAVOURITES_SHARE = 0.18;
const FAVOURITES_MAX = 9000;
const RSS_GOAL_MB = 300;
const CALLS_GOAL = 1.1;
if (!Number.isInteger(WORKS) || !Number.isInteger(ARTISTS) || WORKS < ARTISTS * PER_ARTIST + 100) {
  throw new Error(`--works must be a whole number of at least ${ARTISTS * PER_ARTIST + 100} for --artists ${ARTISTS} (${PER_ARTIST} works each)`);
}
// The CLI as installed runs dist/; through tsx's loader it would measure the loader's memory too.
if (!distIsCurrent(path.join(import.meta.dirname, ".."))) throw new Error("dist/ is older than the sources: run node scripts/build.js first");
const own = WORKS - ARTISTS * PER_ARTIST;
const favourites = Math.min(FAVOURITES_MAX, Math.round(own * FAVOURITES_SHARE));
const deviations = own - favourites;
const dataset = {
  deviations,
  favourites,
  galleryFolders: Math.max(6, Math.ceil(deviations / FOLDER_SIZE) + 1),
  trackedUsers: ARTISTS,
  trackedUserDeviations: PER_ARTIST,
  feedItems: Math.max(40, ARTISTS * 4),
};

/** The peak RSS of a process so far, in bytes (VmHWM), or undefined once it has gone. */
function peakRss(pid: number): number | undefined {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

const started = Date.now();
const env = await createBenchEnv({
  sim: { seed: 9, dataset, clockMode: "real", startTime: new Date(), downloadQuota: 1_000_000 },
  configExtra: { DVAULT_DOWNLOAD_QUOTA: "1000000" },
});
try {
  const setupS = ((Date.now() - started) / 1000).toFixed(0);
  // The artists, tracked as `dvault track import` stores a list of usernames (no API call).
  const artists = [...env.sim.truth.users.values()].slice(1, 1 + ARTISTS).map((u) => u.username);
  const account = (await env.services.accounts.list()).find((a) => a.id === env.accountId);
  if (!account) throw new Error("the bench's account is missing");
  const options = { pool: env.services.pool, accounts: [account], forcedAccount: account, defaultAccount: async () => account, dryRun: false };
  const imported = await importTrackList({ ...options, list: parseTrackList("artists.txt", artists.join("\n")), at: new Date() });
  if (imported.counts.added !== ARTISTS) throw new Error(`tracked ${imported.counts.added} of ${ARTISTS} artists`);

  const from = lastSeq(env.sim);
  const childEnv = {
    PATH: process.env.PATH ?? "",
    ...benchEnvVars({
      databaseUrl: env.databaseUrl,
      prefix: env.prefix,
      apiBase: env.sim.url,
      archiveDir: env.archiveDir,
      extra: { DVAULT_SECRET_KEY: env.secretKeyHex, DVAULT_DOWNLOAD_QUOTA: "1000000", DVAULT_API_RATE_START: "1000000", DVAULT_API_RATE_MAX: "1000000" },
    }),
  };
  const t0 = performance.now();
  const child = spawn(process.execPath, [path.join(import.meta.dirname, "..", "bin", "dvault.js"), "sync", "--once", "--json"], {
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (err += b.toString()));
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, peakRss(child.pid as number) ?? 0)), 100);
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  clearInterval(sampler);
  const wallS = (performance.now() - t0) / 1000;
  if (code !== 0) process.stderr.write(`dvault sync --once exited ${code}: ${err.slice(-2000)}\n`);
  const runs = JSON.parse(out || "[]") as Array<{ source: string; key: string; result?: string; new?: number; apiCalls?: number }>;
  const failed = runs.filter((r) => r.result !== "ok");

  const entries = env.sim.log().filter((e) => e.seq > from && isApiEntry(e));
  const eco = await economyOf(env, entries, env.sim.issueUserToken().access_token);
  const mirrored = (await env.services.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviations")).rows[0]?.n ?? 0;
  const ratio = eco.calls / eco.min;
  const peakMb = peak / 2 ** 20;
  const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");
  const bySource = new Map<string, { runs: number; calls: number; new: number }>();
  for (const r of runs) {
    const s = bySource.get(r.source) ?? { runs: 0, calls: 0, new: 0 };
    bySource.set(r.source, { runs: s.runs + 1, calls: s.calls + (r.apiCalls ?? 0), new: s.new + (r.new ?? 0) });
  }
  const sources = table(
    ["source", "runs", "API calls (its summary)", "new rows"],
    [...bySource].map(([name, s]) => [name, s.runs, s.calls, s.new]),
  );
  const results = table(
    [
      "works mirrored",
      "tracked artists",
      "API calls",
      "listing calls / min",
      "metadata calls / min",
      "once per item or run",
      "minimum",
      "calls / min",
      "wall s",
      "peak RSS MB",
    ],
    [
      [
        mirrored,
        ARTISTS,
        eco.calls,
        `${eco.listingCalls} / ${eco.listingMin}`,
        `${eco.metadataCalls} / ${eco.metadataMin}`,
        eco.fixedCalls,
        eco.min,
        `**${ratio.toFixed(3)}** ${verdict(ratio <= CALLS_GOAL)}`,
        wallS.toFixed(1),
        `**${peakMb.toFixed(0)}** ${verdict(peakMb < RSS_GOAL_MB)}`,
      ],
    ],
  );
  // Metadata batches of fewer than 50 ids: each walk (the account's gallery, each tracked artist's gallery and
  // favourites, …) flushes what is left at its end, so a small walk costs a call for a few ids.
  const metadataIds = entries.filter((e) => OPS.get(`${e.method} ${e.route}`)?.batch !== undefined).map((e) => [e.query["deviationids[]"] ?? []].flat().length);
  const partial = metadataIds.filter((n) => n < METADATA_BATCH);
  const fixed = [...eco.fixedOps].map(([k, v]) => `${k} ×${v}`).join(", ");
  const summary =
    `exit ${code}; ${runs.length} source runs, ${failed.length} not ok${failed.length ? ` (${failed.map((r) => `${r.source}${r.key ? `:${r.key}` : ""} ${r.result ?? "failed"}`).join(", ")})` : ""}. ` +
    `Calls needed once per item or run: ${fixed || "–"}. ` +
    `Metadata calls of fewer than ${METADATA_BATCH} ids: ${partial.length} (${partial.reduce((a, b) => a + b, 0)} ids).`;
  const command = `node --import tsx bench/sync-scale.ts --works ${WORKS} --artists ${ARTISTS}`;
  const lines = [
    `calls ${eco.calls} / minimum ${eco.min} = ${ratio.toFixed(3)} (goal ≤ ${CALLS_GOAL}): ${verdict(ratio <= CALLS_GOAL)}`,
    `peak RSS ${peakMb.toFixed(0)} MB (goal < ${RSS_GOAL_MB} MB): ${verdict(peakMb < RSS_GOAL_MB)}`,
  ];
  process.stdout.write(`\n## First sync\n\n${results}\n\n${sources}\n\n${summary}\n\n${lines.join("\n")}\n`);
  if (!args["no-docs"]) {
    await writeDocSection(
      "sync-scale",
      [
        `## First sync of a ${WORKS.toLocaleString("en").replaceAll(",", " ")}-work account`,
        "",
        `Machine: ${machine()} (the machine is shared with other work: the load is the machine's, not dvault's). Run ${new Date().toISOString()}, the simulator's world drawn in ${setupS} s.`,
        "",
        `Command: \`${command}\``,
        "",
        `The simulator (seed 9, its variance off so that every work is reachable) holds an account of ${own} works of its own (${deviations} in its`,
        `gallery over ${dataset.galleryFolders} folders, each under the offset ceiling of docs/service-behaviour.md#offset-ceiling; ${favourites} favourites in`,
        `its collections) and ${ARTISTS} tracked artists with ${PER_ARTIST} works each, ${dataset.feedItems} watch-feed items announcing them; the artists are`,
        "tracked as `dvault track import` stores them. Then `dvault sync --once` runs in a process of its own (bin/dvault.js, the built",
        "CLI), every source and every tracked artist one after the other, with the pace off (DVAULT_API_RATE_START and _MAX at",
        "1 000 000 per second). Calls are counted from the simulator's request log; the minimum is bench/call-economy.ts's (as in the",
        "API economy section: each listing replayed once to count its items, ceil(items / max limit) pages per listing,",
        "ceil(distinct ids / 50) metadata calls, and the calls that exist once per item or run at their number). Peak RSS is the",
        "process's VmHWM (/proc/<pid>/status, read every 100 ms until it exits). Goals: calls ≤ 1.10 × the minimum, peak RSS < 300 MB.",
        "",
        results,
        "",
        sources,
        "",
        summary,
      ].join("\n"),
    );
  }
  if (code !== 0) process.exitCode = 1;
} finally {
  await env.close();
}
