// `dvault add <deviation URL or id>`: one work archived now, as gallery-dl users are used to: the URL resolved to the
// deviation (docs/service-behaviour.md#deviation-url), its object and metadata stored in the mirror as a sync stores
// them, and its file fetched through the same download run as `dvault download --once`, limited to this work (the
// allowance is spent only once that run's preconditions hold: a usable grant, storage that takes files).
import type { Command } from "commander";
import type { Deviation } from "../api/types.ts";
import { DownloadRepository } from "../db/download.repository.ts";
import { missingGrants, runDownloadsOnce, type DownloadSummary } from "../downloads/run-once.ts";
import { ARCHIVE_EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_PAUSED, UserError } from "../errors.ts";
import type { Services } from "../services.ts";
import { wantedDownload } from "../sync/sources/pending-work.ts";
import { formatBytes } from "../text/bytes.ts";
import { addedBy, resolveDeviation, storeAddedDeviation } from "../track-lists/add-one.ts";
import { printOut } from "./output/print.ts";
import { stopOnSignal } from "./stop-signal.ts";
import { withServices } from "./with-services.ts";
import { pickUserAccount } from "./pick-account.ts";

/** Asked for by a person, now: ahead of what the sources want (it is the only row this run claims anyway). */
const ADDED = addedBy("added with dvault add");

/**
 * The one line `dvault add` ends with, and the exit code `download --once` would give the same run. "added" only when
 * something was: the work new to the mirror, or a file stored by this run; a work added again says it was already there.
 */
async function report(services: Services, d: Deviation, s: DownloadSummary, newToMirror: boolean): Promise<void> {
  if (s.paused) throw new UserError(`the metadata was stored; the file was not: ${s.paused.reason}`, EXIT_PAUSED);
  if (s.needsLogin.length) throw missingGrants(s.needsLogin);
  if (s.interrupted) throw new UserError("stopped before the file was stored: run dvault add again (a partial file is resumed)", EXIT_INTERRUPTED);
  const failure = s.failures[0];
  if (failure) throw new UserError(`the metadata was stored; the file failed: ${failure.error}`);
  const work = `"${d.title ?? d.deviationid}" by ${d.author?.username ?? "?"} (${d.deviationid})`;
  const [wanted] = wantedDownload(d, ADDED);
  const row = wanted ? await new DownloadRepository(services.pool).findDownloadTarget(d.deviationid, wanted.kind) : undefined;
  const there = row?.status === "done" || row?.status === "degraded" ? "archived" : "in the mirror";
  const lead = newToMirror || s.done + s.degraded + s.notDownloadable > 0 ? `added ${work}` : `${work} was already ${there}, nothing new was added`;
  if (!wanted || !row) return printOut(`${lead}: ${d.is_deleted ? "deleted on the service" : "it has no file to download"}; its metadata is in the mirror`);
  if (s.deferred)
    return printOut(`${lead}: the weekly download allowance is spent; the file follows from ${s.nextWindow?.toISOString() ?? "the next quota window"}`);
  const stored = row.path ? `${row.path} (${formatBytes(row.size ?? 0)})` : "";
  if (s.notDownloadable) return printOut(`${lead}: the artist offers no original${row.path ? `; a rendition was stored: ${stored}` : ""}`);
  // A free rendition standing in for the original (the weekly allowance spent): said, with when the original follows.
  if (row.status === "degraded")
    return printOut(
      `${lead}: ${s.degraded ? "stored" : "its file is"} a free rendition, ${stored}; the original waits (${row.degradedReason ?? "the weekly allowance is spent"}) and follows from ${s.nextWindow?.toISOString() ?? "the next quota window"}`,
    );
  if (row.status === "done") return printOut(`${lead}: ${s.done ? "stored" : "its file is"} ${stored}`.trimEnd());
  if (s.busy) return printOut(`${lead}: another dvault process is downloading its file`);
  // Still due after the run, as `download --once` counts it: a failure (exit code 1).
  throw new UserError(`${lead}, but its file was not stored (${row.status.replace("_", " ")}): run dvault add again, or see dvault status`);
}

export function registerAddCommand(program: Command): void {
  program
    .command("add <url>")
    .description("archive one deviation now from its URL (or its id): metadata into the mirror, its file into the archive")
    .addHelpText(
      "after",
      "\nThe URL is a work's page: https://www.deviantart.com/<artist>/art/<title>-<number> (or the old https://<artist>.deviantart.com/art/…).",
    )
    .option("--account <name>", "the account whose token and download allowance are used (default: the only one)")
    .addHelpText("after", ARCHIVE_EXIT_CODES_HELP)
    .action(async (input: string, opts: { account?: string }) => {
      const stop = stopOnSignal("add");
      try {
        await withServices(async (services) => {
          const row = await pickUserAccount(services, opts.account);
          const { client } = await services.apiFor(row.id);
          const d = await resolveDeviation(client, input, stop.signal);
          const added = { pool: services.pool, client, deviation: d, added: ADDED, at: new Date(services.now()), signal: stop.signal };
          const { newToMirror } = await storeAddedDeviation(added);
          const summary = await runDownloadsOnce({ services, account: row.name, deviationids: [d.deviationid], log: services.log, signal: stop.signal });
          await report(services, d, summary, newToMirror);
        });
      } finally {
        stop.dispose();
      }
    });
}
