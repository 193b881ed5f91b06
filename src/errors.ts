// Errors meant for the person at the terminal: one line that says what is wrong and what to do, and the exit
// codes scripts can test for.

/** Something failed (and the general code of a UserError). */
export const EXIT_FAILED = 1;
/** The downloads were paused by the disk guard (`download --once`). */
export const EXIT_PAUSED = 2;
/**
 * What dvault keeps its state in is not there: PostgreSQL or Redis cannot be reached, or the database named by
 * DATABASE_URL does not exist or lacks migrations (only `dvault migrate` creates and migrates it), or refuses
 * writes (explainPgRefusal).
 */
export const EXIT_UNAVAILABLE = 3;
/** An account must log in again (`auth status`, `sync --once`, `download --once`). */
export const EXIT_NEEDS_LOGIN = 4;
/** Stopped by SIGINT or SIGTERM before the end: what is left is listed (128 + SIGINT, as shells report it). */
export const EXIT_INTERRUPTED = 130;

/** The exit codes of the commands that archive (`sync --once`, `download --once`), for their `--help`. */
export const ARCHIVE_EXIT_CODES_HELP = `
Exit codes:
  0  everything that can be archived now is archived; what waits (the next quota window, another dvault
     process, a retry time) is listed under "left"
  1  something still failed when the run's patience was spent (DVAULT_RUN_ITEM_PATIENCE, DVAULT_RUN_PATIENCE),
     or something due was left undone; the summary lists it, with when it is tried again
  2  downloads paused: the archive cannot take files (the disk is nearly full (DVAULT_MIN_FREE_BYTES), or a
     folder or the bucket refuses writes); nothing more of the weekly allowance is spent until it can
  3  PostgreSQL or Redis cannot be reached, the database does not exist or lacks migrations (dvault migrate),
     or it refuses writes (a standby, default_transaction_read_only, its disk full): what was done is kept
  4  an account must log in again (dvault auth login --account <name>); takes precedence over 1
  130  stopped by Ctrl-C (SIGINT) or SIGTERM: run the command again to continue`;

export class UserError extends Error {
  constructor(
    message: string,
    readonly exitCode = EXIT_FAILED,
  ) {
    super(message);
    this.name = "UserError";
  }
}

/** A required service (PostgreSQL, Redis) cannot be reached. */
export class ServiceUnavailableError extends UserError {
  constructor(
    readonly service: "PostgreSQL" | "Redis",
    readonly maskedUrl: string,
    readonly reason: string,
    readonly hint: string,
  ) {
    super(`cannot reach ${service} at ${maskedUrl} (${reason}). ${hint}`, EXIT_UNAVAILABLE);
    this.name = "ServiceUnavailableError";
  }
}

/**
 * The database DATABASE_URL names does not exist, or lacks migrations: every command but `dvault migrate` (and the
 * worker, which migrates a database that exists) refuses it with this one line, naming the database and its server
 * (never the password), and exit code 3. Nothing creates a database as a side effect (src/db/schema-check.ts).
 */
export class DatabaseNotReadyError extends UserError {
  constructor(
    readonly database: string,
    readonly server: string,
    readonly problem: string,
  ) {
    super(
      `the database "${database}" on ${server} ${problem}: run dvault migrate${problem === "does not exist" ? " to create it, or correct DATABASE_URL" : ""}`,
      EXIT_UNAVAILABLE,
    );
    this.name = "DatabaseNotReadyError";
  }
}

/**
 * One line for an --account that names no user account: the client-credentials account is named for what it is, since
 * dvault auth status lists it and "no account named" it would send the person in a circle.
 */
export function noUserAccountNamed(name: string, accounts: readonly { name: string; kind: string }[]): UserError {
  if (accounts.some((a) => a.name === name && a.kind !== "user")) {
    return new UserError(`"${name}" is a client-credentials account, which sees no mature work and owns no allowance: give --account <a user account>`);
  }
  return new UserError(`no account named "${name}": see dvault auth status`);
}

/** One line for the accounts that must log in again, naming the command for each (EXIT_NEEDS_LOGIN). */
export function needsLoginError(accounts: readonly { account: string; message: string }[]): UserError {
  if (accounts.length === 1) return new UserError(accounts[0]!.message, EXIT_NEEDS_LOGIN);
  return new UserError(
    `accounts ${accounts.map((e) => `"${e.account}"`).join(", ")} must be authorized again: run ${accounts.map((e) => `dvault auth login --account ${e.account}`).join(", then ")}`,
    EXIT_NEEDS_LOGIN,
  );
}

/**
 * A server that is there but refuses writes: a read-only database (a standby, default_transaction_read_only) or a
 * disk full on the server. The one line a command ends with when a write of its met one (src/cli/program.ts); what
 * was written before stays, and nothing is spent that a write had to record first (the quota ledger is a write).
 */
export function explainPgRefusal(err: unknown): UserError | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, severity } = e as Error & { code?: unknown; severity?: unknown };
    if (typeof severity !== "string") continue;
    if (code === "25006") {
      return new UserError(
        `PostgreSQL refused a write: the database is read-only (${e.message}). Make it writable (promote the standby, or turn default_transaction_read_only off) and run this again; what was done before is kept`,
        EXIT_UNAVAILABLE,
      );
    }
    if (code === "53100") {
      return new UserError(
        `PostgreSQL refused a write: its disk is full (${e.message}). Free space on the database server and run this again; what was done before is kept`,
        EXIT_UNAVAILABLE,
      );
    }
  }
  return undefined;
}
