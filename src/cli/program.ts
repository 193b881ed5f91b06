// The `dvault` command's table of commands, and the program built from it. Only the command the argv names
// is imported (its module brings the database, the queue and the API client with it); the others appear in
// the root help through their entry here, so `dvault --help` and `--version` load none of them.
import { Command, CommanderError, Help } from "commander";
import { explainPgRefusal, UserError } from "../errors.ts";
import { scrubString } from "../redact.ts";
import { VERSION } from "../version.ts";
import { GLOBAL_FLAGS, setGlobalOutput } from "./output/global.ts";
import { printErr, writeErr, writeOut } from "./output/print.ts";

type Register = (program: Command) => void;

/**
 * One command of `dvault`: `term` and `summary` are what the root help shows (the module's own
 * registration says the same: test/unit/cli-startup.test.ts compares the two helps), `load` imports the
 * module that registers it.
 */
export type CommandEntry = { name: string; term: string; summary: string; load: () => Promise<Register> };

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "config",
    term: "config [options]",
    summary: "print the effective settings and where each came from (secrets masked); --template prints a settings file",
    load: async () => (await import("./config.ts")).registerConfigCommand,
  },
  {
    name: "init",
    term: "init [options]",
    summary: "write a settings file naming the PostgreSQL and Redis servers that answer, or PostgreSQL alone on an embedded server when none does",
    load: async () => (await import("./init.ts")).registerInitCommand,
  },
  {
    name: "db",
    term: "db",
    summary: "the embedded PostgreSQL server (DATABASE_URL=embedded): its status, or stop it",
    load: async () => (await import("./db.ts")).registerDbCommand,
  },
  {
    name: "engine",
    term: "engine",
    summary: "where queues, locks and the shared pace live (DVAULT_ENGINE): what each engine holds, or move the install to the other",
    load: async () => (await import("./engine.ts")).registerEngineCommand,
  },
  {
    name: "migrate",
    term: "migrate",
    summary: "create the database if it does not exist and apply pending migrations",
    load: async () => (await import("./migrate.ts")).registerMigrateCommand,
  },
  {
    name: "worker",
    term: "worker [options]",
    summary: "run the background worker (schedulers, job processors, token refresher) until stopped; DVAULT_WORKER_ROLES picks what it runs",
    load: async () => (await import("./worker.ts")).registerWorkerCommand,
  },
  {
    name: "simulator",
    term: "simulator [options]",
    summary: "run a local simulator of DeviantArt's OAuth2 API (for the demo, tests and experiments)",
    load: async () => (await import("./simulator.ts")).registerSimulatorCommand,
  },
  {
    name: "sync",
    term: "sync [options]",
    summary: "sync every source now: in this process with --once, otherwise by asking the running worker",
    load: async () => (await import("./sync.ts")).registerSyncCommand,
  },
  {
    name: "track",
    term: "track",
    summary: "mirror other users' public gallery, collections and journals",
    load: async () => (await import("./track.ts")).registerTrackCommand,
  },
  {
    name: "add",
    term: "add [options] <url>",
    summary: "archive one deviation now from its URL (or its id): metadata into the mirror, its file into the archive",
    load: async () => (await import("./add.ts")).registerAddCommand,
  },
  {
    name: "api",
    term: "api [options] [operation]",
    summary: "call any operation of the service's API with a stored token and print its JSON answer (--list shows them)",
    load: async () => (await import("./api.ts")).registerApiCommand,
  },
  {
    name: "feeds",
    term: "feeds",
    summary: "Atom feeds of the archive: the feed readers' tokens",
    load: async () => (await import("./feeds.ts")).registerFeedsCommand,
  },
  {
    name: "auth",
    term: "auth",
    summary: "authorize dvault with the service and manage the stored grants",
    load: async () => (await import("./auth.ts")).registerAuthCommand,
  },
  {
    name: "digest",
    term: "digest [options]",
    summary: "digests of what happened: --preview renders one without sending, --send sends one now",
    load: async () => (await import("./digest.ts")).registerDigestCommand,
  },
  {
    name: "status",
    term: "status [options]",
    summary: "show accounts, sync sources, queues, downloads, disk and workers at a glance",
    load: async () => (await import("./status.ts")).registerStatusCommand,
  },
  {
    name: "jobs",
    term: "jobs",
    summary: "inspect failed jobs, retry them, pause or resume a queue",
    load: async () => (await import("./jobs.ts")).registerJobsCommand,
  },
  {
    name: "search",
    term: "search [options] <text...>",
    summary: "search the archive: titles, descriptions, tags, journal and literature text, comments, notes and messages",
    load: async () => (await import("./search.ts")).registerSearchCommand,
  },
  {
    name: "download",
    term: "download [options]",
    summary: "download the due originals: in this process with --once, otherwise by handing them to the running worker",
    load: async () => (await import("./download.ts")).registerDownloadCommand,
  },
  {
    name: "archive",
    term: "archive [options]",
    summary: "sync then download in one process: what sync --once then download --once do, with one summary and one exit code",
    load: async () => (await import("./archive.ts")).registerArchiveCommand,
  },
  {
    name: "verify",
    term: "verify [options]",
    summary: "re-hash the archive: report missing, corrupt and orphaned files",
    load: async () => (await import("./verify.ts")).registerVerifyCommand,
  },
  {
    name: "storage",
    term: "storage",
    summary: "the archive's blob store: the local folder or an S3-compatible bucket",
    load: async () => (await import("./storage.ts")).registerStorageCommand,
  },
  {
    name: "thumbnails",
    term: "thumbnails [options]",
    summary: "make the missing thumbnails of the archive's files (the worker does this after downloads)",
    load: async () => (await import("./thumbnails.ts")).registerThumbnailsCommand,
  },
  {
    name: "import",
    term: "import",
    summary: "adopt files you already have into the archive",
    load: async () => (await import("./import.ts")).registerImportCommand,
  },
  {
    name: "account",
    term: "account",
    summary: "per-account settings",
    load: async () => (await import("./account.ts")).registerAccountCommand,
  },
  {
    name: "demo",
    term: "demo [options]",
    summary: "archive a simulated account end to end (login, sync, downloads, digest) into its own database and ./.demo",
    load: async () => (await import("./demo.ts")).registerDemoCommand,
  },
  {
    name: "backup",
    term: "backup [options]",
    summary: "write the database (every table, through the driver), the archive directory and the secret key to a new directory",
    load: async () => (await import("./backup.ts")).registerBackupCommands,
  },
  {
    name: "restore",
    term: "restore [options]",
    summary: "restore a backup into an empty database and an empty archive directory",
    load: async () => (await import("./backup.ts")).registerBackupCommands,
  },
];

/** The command `args` (process.argv without node and the script) runs: its first word after the global flags, or the one after `help`. */
export function commandNamed(args: readonly string[]): CommandEntry | undefined {
  let first = 0;
  while (first < args.length) {
    const a = args[first] ?? "";
    if (GLOBAL_FLAGS.includes(a) || /^--(config|archive-dir)=/.test(a)) first += 1;
    else if (SETTING_OPTIONS.includes(a)) first += 2;
    else break;
  }
  const rest = args.slice(first);
  const word = rest[0] === "help" ? rest[1] : rest[0];
  return COMMANDS.find((c) => c.name === word);
}

/** The program's options that take a value and set settings (they may come before the command's name). */
const SETTING_OPTIONS: readonly string[] = ["--config", "--archive-dir"];

/**
 * Reads the settings file and applies the flags that set settings, before any command reads its config (imported
 * here, so --help and --version load nothing of it).
 */
async function applySettingOptions(opts: { config?: string; archiveDir?: string }): Promise<void> {
  const { applySettings } = await import("../config/settings-file.ts");
  applySettings({
    configFlag: opts.config,
    flags: opts.archiveDir === undefined ? [] : [{ name: "DVAULT_ARCHIVE_DIR", flag: "--archive-dir", value: opts.archiveDir }],
  });
}

/**
 * An option or an argument given an empty value (`--account "$NAME"` with NAME unset) was taken as not given at all:
 * every account synced, ./archive used over DVAULT_ARCHIVE_DIR, ./.env read, a digest preview in a temporary folder,
 * the current folder imported. Refused in one line naming it, before anything runs.
 */
function refuseEmptyValues(action: Command): void {
  // An argument too: `import gallery-dl "$DIR"` with DIR unset read the current folder.
  const blank = action.args.findIndex((a) => a.trim() === "");
  if (blank !== -1) {
    const names = action.registeredArguments.map((a) => a.name());
    const name = names[Math.min(blank, names.length - 1)] ?? "an argument";
    throw new UserError(`<${name}> was given an empty value (a variable left unset?): give one`);
  }
  for (let cmd: Command | null = action; cmd; cmd = cmd.parent) {
    for (const option of cmd.options) {
      const name = option.attributeName();
      const value: unknown = cmd.getOptionValue(name);
      if (typeof value !== "string" || value.trim() !== "" || cmd.getOptionValueSource(name) !== "cli") continue;
      throw new UserError(`${option.long ?? option.flags} was given an empty value (a variable left unset?): give one, or leave the option out`);
    }
  }
}

function rootProgram(): Command {
  return new Command("dvault")
    .description("Self-hosted sync and archival worker for DeviantArt's OAuth2 API")
    .version(VERSION, "-V, --version", "print the version")
    .showHelpAfterError("(run with --help for usage)")
    .addHelpText(
      "after",
      "\nExit codes: 0 done, 1 something failed, 2 downloads paused (disk nearly full, or a folder or the bucket refusing\nwrites) or verify found missing or corrupt files, 3 PostgreSQL or Redis unreachable, the database missing or not\nmigrated (run dvault migrate), or refusing writes (a standby, read-only, its disk full), 4 an account must log in again\n(dvault auth login). sync --help and download --help say more.\n\nSettings come from the environment, ./.env (or --config <file>, or DVAULT_CONFIG) and flags: dvault config --help\nlists every variable, dvault config shows their values and where each came from.",
    )
    .option("-q, --quiet", "print only problems: logs at error, no progress lines, a run's summary only when it fails")
    .option("-v, --verbose", "logs at info (otherwise warn, in a terminal or a pipe; LOG_LEVEL=debug or trace wins)")
    .option("--config <file>", "the settings file (.env format; default ./.env when there is one, or DVAULT_CONFIG); the environment overrides it")
    .option("--archive-dir <dir>", "where files are stored (overrides DVAULT_ARCHIVE_DIR)")
    .hook("preAction", async (cmd, action) => {
      refuseEmptyValues(action);
      setGlobalOutput(cmd.opts());
      await applySettingOptions(cmd.opts());
    })
    .configureOutput({ writeOut, writeErr })
    .exitOverride();
}

/**
 * The program for `args`: the named command registered by its own module (its help, options and action
 * complete), or, when no command is named (`--help`, `--version`, a typo), every command as its entry.
 */
export async function buildProgram(args: readonly string[]): Promise<Command> {
  const program = rootProgram();
  const wanted = commandNamed(args);
  if (wanted) {
    (await wanted.load())(program);
    return program;
  }
  const terms = new Map(COMMANDS.map((c) => [c.name, c.term]));
  const standard = new Help();
  program.configureHelp({ subcommandTerm: (cmd) => terms.get(cmd.name()) ?? standard.subcommandTerm(cmd) });
  for (const entry of COMMANDS) program.command(entry.name).description(entry.summary);
  return program;
}

/** Every command registered by its module, as before the table existed (for the tests that compare the two). */
export async function buildFullProgram(): Promise<Command> {
  const program = rootProgram();
  const registers = new Set(await Promise.all(COMMANDS.map((c) => c.load())));
  for (const register of registers) register(program);
  return program;
}

/** Prints one line for expected failures; a stack only when LOG_LEVEL asks for it. */
export function reportFailure(err: unknown, debug: boolean): number {
  if (err instanceof CommanderError) return err.exitCode;
  if (err instanceof UserError) {
    printErr(`dvault: ${scrubString(err.message)}`);
    return err.exitCode;
  }
  const refused = explainPgRefusal(err);
  if (refused) {
    printErr(`dvault: ${scrubString(refused.message)}`);
    return refused.exitCode;
  }
  const e = err instanceof Error ? err : new Error(String(err));
  printErr(`dvault: unexpected error: ${scrubString(e.message)}`);
  printErr(debug && e.stack ? scrubString(e.stack) : "dvault: run again with LOG_LEVEL=debug for details");
  return 1;
}
