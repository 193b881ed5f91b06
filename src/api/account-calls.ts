// The two account calls the token lifecycle needs (placebo, whoami), made through the typed client and so
// through the catalogue like every other call.
import type { AccountTokens } from "./account-tokens.ts";
import { DaClient } from "./client.ts";
import { DEFAULT_REFRESH_MARGIN_MS } from "./token-session.ts";
import type { ApiTransport } from "./transport.ts";
import type { Placebo, User } from "./types.ts";

/** What `/user/whoami` says about the token's user. */
export type Whoami = User;

export function placebo(transport: ApiTransport, signal?: AbortSignal): Promise<Placebo> {
  return new DaClient(transport).placebo(signal ? { signal } : {});
}

export function whoami(transport: ApiTransport): Promise<Whoami> {
  return new DaClient(transport).whoami();
}

/**
 * Before long work: a token that outlives `minValidityMs` (default: the refresh margin), then the
 * placebo call through the transport, which refreshes once more on a 401.
 */
export async function ensureFreshToken({
  tokens,
  transport,
  minValidityMs = DEFAULT_REFRESH_MARGIN_MS,
  signal,
}: {
  tokens: AccountTokens;
  transport: ApiTransport;
  minValidityMs?: number;
  signal?: AbortSignal;
}): Promise<void> {
  await tokens.ensureValidFor(minValidityMs);
  await placebo(transport, signal);
}
