// The `dvault` command line: one file per command under src/cli/, wired together here.
import { Command, CommanderError } from "commander";
import { UserError } from "../errors.ts";
import { scrubString } from "../redact.ts";
import { VERSION } from "../version.ts";
import { registerAccountCommand } from "./account.ts";
import { registerAuthCommand } from "./auth.ts";
import { registerDigestCommand } from "./digest.ts";
import { registerDownloadCommand } from "./download.ts";
import { registerImportCommand } from "./import.ts";
import { registerJobsCommand } from "./jobs.ts";
import { registerBackupCommands } from "./backup.ts";
import { registerDemoCommand } from "./demo.ts";
import { registerMigrateCommand } from "./migrate.ts";
import { setGlobalOutput } from "./output/mode.ts";
import { exitQuietlyOnClosedPipe } from "./output/print.ts";
import { registerSearchCommand } from "./search.ts";
import { registerSimulatorCommand } from "./simulator.ts";
import { registerStatusCommand } from "./status.ts";
import { registerSyncCommand } from "./sync.ts";
import { registerTrackCommand } from "./track.ts";
import { registerVerifyCommand } from "./verify.ts";
import { registerWorkerCommand } from "./worker.ts";

export function buildProgram(): Command {
  const program = new Command("dvault")
    .description("Self-hosted sync and archival worker for DeviantArt's OAuth2 API")
    .version(VERSION, "-V, --version", "print the version")
    .showHelpAfterError("(run with --help for usage)")
    .option("-q, --quiet", "print results only: no progress lines, logs at error")
    .option("-v, --verbose", "logs at info, beside the progress lines")
    .hook("preAction", (cmd) => setGlobalOutput(cmd.opts()))
    .exitOverride();
  registerMigrateCommand(program);
  registerWorkerCommand(program);
  registerSimulatorCommand(program);
  registerSyncCommand(program);
  registerTrackCommand(program);
  registerAuthCommand(program);
  registerDigestCommand(program);
  registerStatusCommand(program);
  registerJobsCommand(program);
  registerSearchCommand(program);
  registerDownloadCommand(program);
  registerVerifyCommand(program);
  registerImportCommand(program);
  registerAccountCommand(program);
  registerDemoCommand(program);
  registerBackupCommands(program);
  return program;
}

/** Prints one line for expected failures; a stack only when LOG_LEVEL asks for it. */
export function reportFailure(err: unknown, debug: boolean): number {
  if (err instanceof CommanderError) return err.exitCode;
  if (err instanceof UserError) {
    process.stderr.write(`dvault: ${scrubString(err.message)}\n`);
    return err.exitCode;
  }
  const e = err instanceof Error ? err : new Error(String(err));
  process.stderr.write(`dvault: unexpected error: ${scrubString(e.message)}\n`);
  if (debug && e.stack) process.stderr.write(`${scrubString(e.stack)}\n`);
  else process.stderr.write("dvault: run again with LOG_LEVEL=debug for details\n");
  return 1;
}

async function main(): Promise<void> {
  exitQuietlyOnClosedPipe();
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (err) {
    process.exitCode = reportFailure(err, /^(debug|trace)$/i.test(process.env.LOG_LEVEL ?? ""));
  }
}

await main();
