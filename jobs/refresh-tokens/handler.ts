// Refreshes tokens that would expire before the next run of this job; an idle daemon keeps its grants alive.
import { ReauthRequiredError, TokenRefreshDeferredError } from "../../src/api/token-errors.ts";
import { unusableAccount } from "../../src/api/token-manager.ts";
import { DEFAULT_REFRESH_MARGIN_MS } from "../../src/api/token-session.ts";
import type { JobResult } from "../../src/queue/job-definition.ts";
import type { WorkerContext } from "../context.ts";
import type { RefreshTokensPayload } from "./definition.ts";

/** The job runs every 5 minutes; a token must outlive the next run plus the usual margin. */
const MIN_VALIDITY_MS = DEFAULT_REFRESH_MARGIN_MS + 5 * 60_000;

export async function refreshTokensHandler(_payload: RefreshTokensPayload, ctx: WorkerContext): Promise<JobResult> {
  if (!ctx.services.config.clientId) return { status: "skipped", reason: "DVAULT_CLIENT_ID is not set: no accounts can be refreshed" };
  // Accounts whose grant is lost, or whose tokens the install's key cannot read, wait for a person; the token manager is
  // made only for the others (made with no key found, it would make a key file: src/secret-key.ts).
  const key = ctx.services.installKey();
  const usable = (await ctx.services.accounts.list()).filter((row) => row.kind === "user" && !unusableAccount(key, row));
  let fresh = 0;
  const problems: string[] = [];
  if (usable.length === 0) return { status: "done", fresh, problems };
  const manager = ctx.services.tokens();
  for (const row of usable) {
    try {
      await (await manager.forAccountId(row.id)).ensureValidFor(MIN_VALIDITY_MS);
      fresh++;
    } catch (err) {
      // Needs-reauth is recorded by the token manager itself (and alerts later); a deferred refresh retries next run.
      if (err instanceof ReauthRequiredError || err instanceof TokenRefreshDeferredError) problems.push(err.message);
      else throw err;
    }
  }
  return { status: "done", fresh, problems };
}
