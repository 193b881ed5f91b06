// Whether a folder source's witnesses agree (docs/service-behaviour.md#folders-optional): the folders and
// the "all" view list the same deviations, and where the "all" view stops at the offset ceiling, the
// profile's count says how many no listing could reach. A source is "ok" only when they agree; otherwise
// "incomplete", with the counts recorded as the source's "witnesses" gap. What a public token may not see
// (mature works, docs/service-behaviour.md#public-token-hides-mature) is not missing: it is counted as
// not visible and the source stays ok.
import type { SourceContext, SourceOutcome } from "../source.ts";
import type { FolderSyncResult } from "./folder-walk-types.ts";

/** The gap scope under which a source's witness comparison is recorded. */
export const WITNESS_GAP = "witnesses";
/** The gap scope of the works that may be gone but could not be asked about yet (vanished.ts). */
export const UNSETTLED_GAP = "unsettled";

export type WitnessOptions = {
  /** "deviations in the gallery of X", "favourites of X": what the counts are of, in words. */
  what: string;
  /** The profile's count where one applies (the gallery's user_deviations), when no listing gives the total. */
  profileCount?: number | null;
  /** A public (client-credentials) token: shortfalls are works this token may not see. */
  publicToken?: boolean;
  /**
   * The operation of an "all" view that is only a second witness here (collections: every favourite also
   * sits in a folder): when the service does not answer it, the source goes on with its folders, not degraded.
   */
  optionalAll?: string;
};

type Verdict = { ok: boolean; expected: number | null; mirrored: number; notes: string[] };

/** Compares the witnesses of one sweep. Pure; the caller records it. */
export function judgeWitnesses(result: FolderSyncResult, options: WitnessOptions): Verdict {
  const notes: string[] = [];
  if (options.optionalAll && result.gone.includes(options.optionalAll)) notes.push(`${options.optionalAll} is not answered: the folders alone were walked`);
  const mirrored = result.seen;
  let expected: number | null = null;
  let ok = true;
  if (result.all?.complete) {
    expected = result.all.listed;
    if (mirrored > expected) {
      ok = false;
      notes.push(`${mirrored - expected} listed in folders are missing from the "all" view`);
    }
  } else if (result.all) {
    // The "all" view stopped early (offset ceiling): the profile's count is the only total there is.
    expected = options.profileCount ?? null;
    if (expected === null) {
      ok = false;
      notes.push(`the "all" view stopped after ${result.all.listed}; deviations in no folder past that may be unreachable`);
    } else if (expected > mirrored) {
      ok = false;
      notes.push(`${expected - mirrored} unreachable: in no folder and past the offset ceiling of the "all" view`);
    }
  }
  if (result.folderIssues.length > 0) {
    ok = false;
    notes.push(...result.folderIssues);
  }
  if (!ok && options.publicToken) {
    return { ok: true, expected, mirrored, notes: [`not visible to a public token (mature or locked works): ${notes.join("; ")}`] };
  }
  return { ok, expected, mirrored, notes };
}

/**
 * The outcome of a folder source after its walk: degraded when part of it is gone, incomplete when its
 * witnesses disagree (recorded as the "witnesses" gap, cleared when they agree again). Between sweeps the
 * last sweep's verdict stands.
 */
export async function witnessOutcome(ctx: SourceContext, result: FolderSyncResult, options: WitnessOptions): Promise<SourceOutcome> {
  const outcome = withUnsettled(await listingsOutcome(ctx, result, options), result);
  await recordUnsettled(ctx, [result]);
  return outcome;
}

/**
 * The works the walks could not ask about, as the source's "unsettled" gap (status and the digest say why the
 * source is not done), or the gap cleared once none is left.
 */
export async function recordUnsettled(ctx: SourceContext, results: ReadonlyArray<Pick<FolderSyncResult, "unsettled">>): Promise<void> {
  const count = results.reduce((n, r) => n + r.unsettled.count, 0);
  const cause = results.find((r) => r.unsettled.cause)?.unsettled.cause;
  const reason = unsettledWords({ unsettled: { count, ...(cause ? { cause } : {}) } });
  if (reason) await ctx.repos.syncState.recordGap(ctx.ref, UNSETTLED_GAP, { expected: null, mirrored: null, reason }, ctx.now());
  else if (ctx.state?.gaps[UNSETTLED_GAP]) await ctx.repos.syncState.clearGap(ctx.ref, UNSETTLED_GAP, ctx.now());
}

/**
 * An outcome with the works that may be gone but could not be asked about (vanished.ts) added: not done,
 * though the listings may agree, so "ok" becomes "incomplete" with the reason.
 */
export function withUnsettled(outcome: SourceOutcome, result: Pick<FolderSyncResult, "unsettled">): SourceOutcome {
  const unsettled = unsettledWords(result);
  if (!unsettled) return outcome;
  // Degraded says why already (the lookup removed): the count is what it adds.
  if (outcome.result === "degraded") return { ...outcome, unavailableReason: `${outcome.unavailableReason}; ${unsettledWords(result, false)}` };
  const reason = outcome.result === "incomplete" && outcome.reason ? `${outcome.reason}; ${unsettled}` : unsettled;
  const { note: _note, ...rest } = outcome;
  return { ...rest, result: "incomplete", reason };
}

/** "2 works that may be gone upstream could not be asked about (HTTP 429 user_api_threshold); asked again at the next run". */
export function unsettledWords(result: Pick<FolderSyncResult, "unsettled">, withCause = true): string | undefined {
  const { count, cause } = result.unsettled;
  if (count === 0) return undefined;
  const works = count === 1 ? "1 work that may be gone upstream" : `${count} works that may be gone upstream`;
  return `${works} could not be asked about${cause && withCause ? ` (${cause})` : ""}; asked again at the next run`;
}

async function listingsOutcome(ctx: SourceContext, result: FolderSyncResult, options: WitnessOptions): Promise<SourceOutcome> {
  const missing = result.gone.filter((op) => op !== options.optionalAll);
  const gone = missing.length > 0 ? `${missing.join(", ")} removed by the service (404 Api endpoint not found.)` : undefined;
  if (!result.sweep || result.resumed) {
    const standing = ctx.state?.gaps[WITNESS_GAP];
    if (gone) return { result: "degraded", unavailableReason: gone, completeSweep: result.sweep };
    return standing ? { result: "incomplete", reason: standing.reason, completeSweep: result.sweep } : { result: "ok", completeSweep: result.sweep };
  }
  const verdict = judgeWitnesses(result, options);
  const reason = verdict.notes.length > 0 ? `${options.what}: ${verdict.notes.join("; ")}` : undefined;
  await ctx.transaction(async (repos) => {
    if (!verdict.ok && reason) {
      await repos.syncState.recordGap(ctx.ref, WITNESS_GAP, { expected: verdict.expected, mirrored: verdict.mirrored, reason }, ctx.now());
    } else if (ctx.state?.gaps[WITNESS_GAP]) {
      await repos.syncState.clearGap(ctx.ref, WITNESS_GAP, ctx.now());
    }
  });
  if (gone) return { result: "degraded", unavailableReason: gone, completeSweep: true };
  if (!verdict.ok) return { result: "incomplete", reason: reason ?? options.what, completeSweep: true };
  return { result: "ok", completeSweep: true, ...(reason ? { note: reason } : {}) };
}
