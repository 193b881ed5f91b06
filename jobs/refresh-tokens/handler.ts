// Refreshes tokens that would expire before the next run of this job; an idle daemon keeps its grants alive.
import { ReauthRequiredError, TokenRefreshDeferredError } from "../../src/api/token-errors.ts";
import { DEFAULT_REFRESH_MARGIN_MS } from "../../src/api/token-session.ts";
import type { JobResult } from "../../src/queue/job-definition.ts";
import type { WorkerContext } from "../context.ts";
import type { RefreshTokensPayload } from "./definition.ts";

/** The job runs every 5 minutes; a token must outlive the next run plus the usual margin. */
const MIN_VALIDITY_MS = DEFAULT_REFRESH_MARGIN_MS + 5 * 60_000;

export async function refreshTokensHandler(_payload: RefreshTokensPayload, ctx: WorkerContext): Promise<JobResult> {
  if (!ctx.services.config.clientId) return { status: "skipped", reason: "DVAULT_CLIENT_ID is not set: no accounts can be refreshed" };
  const manager = ctx.services.tokens();
  let fresh = 0;
  const problems: string[] = [];
  for (const row of await ctx.services.accounts.list()) {
    if (row.kind !== "user" || row.state === "needs_reauth" || row.state === "revoked") continue;
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
