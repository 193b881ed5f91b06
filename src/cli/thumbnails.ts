// `dvault thumbnails --once [--rebuild]`: the thumbnails.backfill job (jobs/thumbnails) run to its end in this
// process, through the worker's handler and WorkerHost on a private queue (src/queue/run-now.ts), then a
// one-line summary. The worker runs the same job after downloads and every half hour; the dashboard makes a
// missing thumbnail when it is first asked for.
import type { Command } from "commander";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { loadConfig } from "../config.ts";
import { sweepWrittenAtStart } from "../downloads/partial-sweep.ts";
import { UserError } from "../errors.ts";
import { cliLogger } from "./output/mode.ts";
import { printJson, printOut } from "./output/print.ts";
import { runHere } from "../../jobs/run-here.ts";
import { Producer } from "../queue/producer.ts";
import { createServices } from "../services.ts";
import type { BackfillResult } from "../storage/thumbnails.ts";

export function formatBackfill(r: BackfillResult, seconds: number): string {
  const lines = [
    `thumbnails: ${r.generated} made, ${r.placeholders} placeholder tile(s), ${r.present} already there, ${r.failed} failed, of ${r.files} file(s) in ${seconds.toFixed(1)} s`,
    ...r.failures.map((f) => `  failed: ${f}`),
  ];
  return lines.join("\n");
}

export function registerThumbnailsCommand(program: Command): void {
  program
    .command("thumbnails")
    .description("make the missing thumbnails of the archive's files (the worker does this after downloads)")
    .option("--once", "run here until every file has its thumbnails, then exit")
    .option("--rebuild", "make every thumbnail again, even those that exist")
    .option("--json", "print the result as JSON")
    .action(async (opts: { once?: boolean; rebuild?: boolean; json?: boolean }) => {
      if (!opts.once) throw new UserError("dvault thumbnails needs --once (a running worker makes thumbnails on its own)");
      const config = loadConfig();
      const log = cliLogger(config);
      const services = await createServices({ config, log });
      const producer = new Producer([...JOB_DEFINITIONS], services.queues);
      const started = Date.now();
      try {
        // First the partial files a killed thumbnail run (or any killed writer) left, as a worker's start removes them.
        await sweepWrittenAtStart({ root: config.archiveDir }, log);
        const [outcome] = await runHere({ services, log, producer, queue: "maintenance" }, [
          { name: "thumbnails.backfill", payload: { rebuild: opts.rebuild === true, untilDone: true } },
        ]);
        if (outcome?.state !== "completed")
          throw new UserError(`the thumbnails did not finish: ${outcome && "reason" in outcome ? outcome.reason : "no outcome"}`);
        const result = outcome.value as BackfillResult;
        if (opts.json) printJson({ ...result, seconds: (Date.now() - started) / 1000 });
        else printOut(formatBackfill(result, (Date.now() - started) / 1000));
      } finally {
        await producer.close();
        await services.close();
      }
    });
}
