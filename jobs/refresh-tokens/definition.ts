// tokens.refresh: keeps every account's access token fresh ahead of expiry through the one refresh path.
import { z } from "zod";
import type { JobDefinition } from "../../src/queue/job-definition.ts";

export const RefreshTokensPayload = z.object({});
export type RefreshTokensPayload = z.infer<typeof RefreshTokensPayload>;

export const refreshTokensDefinition = {
  name: "tokens.refresh",
  queue: "maintenance",
  payload: RefreshTokensPayload,
  attempts: 1,
  backoffMs: 60_000,
  every: 5 * 60_000,
} satisfies JobDefinition<"tokens.refresh", RefreshTokensPayload>;

declare module "../../src/queue/contract.ts" {
  interface JobPayloads {
    "tokens.refresh": RefreshTokensPayload;
  }
}
