// The "static" source: the service's country list and policy texts (/data/*), weekly. A policy text is
// archived only when it differs from what is stored; a run that is not a full sweep checks half of the
// four endpoints (in turn), so a no-change run costs two calls and every endpoint is checked every other run.
import { createHash } from "node:crypto";
import { z } from "zod";
import type { DaClient } from "../../api/client.ts";
import type { PolicyKind } from "../../db/static-data.repository.ts";
import type { SourceContext, SourceDefinition, SourceOutcome } from "../source.ts";
import { DEFAULT_EVERY_MS } from "../source.ts";

type Part = "countries" | PolicyKind;

/** Two parts per run outside full sweeps: [countries, privacy] and then [submission, tos]. */
const ROTATION: readonly (readonly Part[])[] = [
  ["countries", "privacy"],
  ["submission", "tos"],
];
const ALL_PARTS: readonly Part[] = ["countries", "privacy", "submission", "tos"];

const StaticStateSchema = z.object({
  /** Index into ROTATION of the next partial run. */
  next: z.number().int().min(0).catch(0),
  /** sha256 of the last text fetched per policy kind, to tell a new version from the first one. */
  policies: z.record(z.string(), z.string()).catch({}),
});
type StaticState = z.infer<typeof StaticStateSchema>;

function readState(cursor: unknown): StaticState {
  const parsed = StaticStateSchema.safeParse(cursor ?? {});
  return parsed.success ? parsed.data : { next: 0, policies: {} };
}

const POLICY_FETCH: Record<PolicyKind, (client: DaClient) => Promise<{ text: string }>> = {
  privacy: (c) => c.privacyPolicy(),
  submission: (c) => c.submissionPolicy(),
  tos: (c) => c.termsOfService(),
};

async function run(ctx: SourceContext): Promise<SourceOutcome> {
  // Public endpoints: a client token spares the user's rate budget when one is configured.
  const client = (await ctx.publicClient()) ?? ctx.client;
  const state = readState(ctx.state?.cursor);
  const slot = state.next % ROTATION.length;
  const parts = ctx.full ? ALL_PARTS : (ROTATION[slot] ?? ALL_PARTS);
  const policies = { ...state.policies };

  for (const part of parts) {
    const at = ctx.now();
    if (part === "countries") {
      const { results } = await client.countries();
      const counts = await ctx.repos.staticData.saveCountries(results, at);
      ctx.counters.new += counts.inserted;
      ctx.counters.changed += counts.changed;
      continue;
    }
    const { text } = await POLICY_FETCH[part](client);
    const sha256 = createHash("sha256").update(text).digest("hex");
    await ctx.repos.staticData.savePolicyText(part, text, at);
    const before = policies[part];
    if (before === undefined) ctx.counters.new++;
    else if (before !== sha256) ctx.counters.changed++;
    policies[part] = sha256;
  }

  const next: StaticState = { next: ctx.full ? state.next : (slot + 1) % ROTATION.length, policies };
  await ctx.repos.syncState.saveSourceState(ctx.ref, { cursor: next });
  return { result: "ok", completeSweep: ctx.full };
}

export const staticSource: SourceDefinition = {
  name: "static",
  everyMs: DEFAULT_EVERY_MS.static,
  needsUser: false,
  run,
};
