// The two ways the token owner says "not now": the grant is gone until a person logs in again, or this
// refresh could not happen and a later one will.
import { UserError } from "../errors.ts";
import type { StoredAccount } from "./token-store.ts";

/** The grant is gone: the user must authorize again. Jobs should stop (BullMQ UnrecoverableError). */
export class ReauthRequiredError extends UserError {
  /** A job that meets it completes as skipped (worker-host.ts): retrying cannot help until a person logs in. */
  readonly jobOutcome = "skip" as const;
  readonly command: string;
  constructor(
    readonly account: string,
    readonly reason: string,
    options: { implicit?: boolean } = {},
  ) {
    const login = `dvault auth login --account ${account}`;
    const command = options.implicit ? `${login} (or --implicit again)` : login;
    super(
      `account "${account}" must be authorized again: ${reason}. Run: ${command}` +
        ` — or, on a headless server: dvault auth import --refresh-token <token> --account ${account}`,
      4,
    );
    this.name = "ReauthRequiredError";
    this.command = login;
  }
}

/** Why the account's stored grant cannot be used until a person logs in again; undefined when it can be. */
export function grantUnusable(row: Pick<StoredAccount, "name" | "state" | "stateReason" | "grantType">): ReauthRequiredError | undefined {
  if (row.state === "needs_reauth")
    return new ReauthRequiredError(row.name, row.stateReason ?? "its grant was lost", { implicit: row.grantType === "implicit" });
  if (row.state === "revoked") return new ReauthRequiredError(row.name, row.stateReason ?? "it was logged out");
  return undefined;
}

/**
 * The refresh did not happen now: try later. `grantIntact` says whether that is known (the request never
 * reached the service, or it answered that it did not process it); otherwise the next attempt will tell.
 */
export class TokenRefreshDeferredError extends UserError {
  constructor(
    readonly account: string,
    readonly reason: string,
    readonly grantIntact = true,
    /** What kept it from refreshing, when a store of dvault's did (src/queue/outage.ts reads it). */
    override readonly cause?: unknown,
  ) {
    super(
      `could not refresh the access token of account "${account}" right now (${reason}); ` +
        (grantIntact ? "the grant is intact, try again later" : "the next refresh will show whether the refresh token is still good"),
      3,
    );
    this.name = "TokenRefreshDeferredError";
  }
}
