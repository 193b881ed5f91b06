// Artists the service answers as unavailable (docs/service-behaviour.md#user-error-codes): suspended
// (error_code 0), deactivated (1) or not found (2; a renamed user answers not found under the old name).
// Their archived works are kept, marked with why, never as deleted, and come back when the account does.
// Classification reads error codes only (src/api/errors.ts), never the service's wording.
import type { DaClient } from "../../api/client.ts";
import { failureWords, isApiError, userStateOf, type UserState } from "../../api/errors.ts";
import type { Profile } from "../../api/types.ts";
import type { ArtistReason } from "../../db/user.repository.ts";
import type { SourceContext } from "../source.ts";

export const ARTIST_REASON: Readonly<Record<UserState, ArtistReason>> = {
  suspended: "artist_suspended",
  deactivated: "artist_deactivated",
  not_found: "artist_not_found",
};

/** How long an unavailable artist waits before their profile is asked again. */
export const RECHECK_UNAVAILABLE_MS = 24 * 3600_000;
/** Unavailable artists are read this many at a time; a run asks every one that is due (a batch is no ceiling). */
const RECHECK_BATCH = 50;

export type UserCheck = { available: true; profile: Profile } | { available: false; state: UserState };

/** A walk of a user's listings met the user unavailable: the source records that and stops, it does not fail. */
export class UserUnavailableError extends Error {
  constructor(
    readonly username: string,
    readonly state: UserState,
    readonly userid: string | null,
  ) {
    super(`user "${username}" ${userStateWords(state)} (the service answers error_code ${STATE_CODE[state]}); the archive keeps their works`);
    this.name = "UserUnavailableError";
  }
}

const STATE_CODE: Readonly<Record<UserState, number>> = { suspended: 0, deactivated: 1, not_found: 2 };

/**
 * The user's profile, or the state the service answered instead. Anything else (the endpoint removed, a
 * network failure) propagates: only an answer about the user says they are gone.
 */
export async function checkUser(client: DaClient, username: string, params: Parameters<DaClient["profile"]>[1] = {}): Promise<UserCheck> {
  try {
    return { available: true, profile: await client.profile(username, params) };
  } catch (err) {
    const state = userStateOf(err);
    if (state) return { available: false, state };
    throw err;
  }
}

/**
 * What a failed check of a user settles: nothing. The service's answers about a user are error_code 0, 1 and 2
 * (docs/service-behaviour.md#user-error-codes), which checkUser reads; any other refusal, a throttle or a
 * failure says nothing about them, so what the mirror holds of them is left as it is and asked about again
 * later. What concerns the account (a rejected token, a missing scope) is thrown on. `stop`: asking about
 * others now would meet the same (a throttle, a failing service).
 */
export function judgeUserCheck(err: unknown): { cause: string; stop: boolean } {
  if (!isApiError(err) || err.kind === "invalid_token" || err.kind === "insufficient_scope") throw err;
  const stop = err.kind === "throttled" || err.kind === "server" || err.kind === "network" || err.kind === "malformed";
  return { cause: failureWords(err), stop };
}

/** "suspended", "deactivated their account", ...: the words status, logs and the digest use. */
export function userStateWords(state: UserState): string {
  switch (state) {
    case "suspended":
      return "is suspended";
    case "deactivated":
      return "deactivated their account";
    case "not_found":
      return "is not found (renamed, deactivated or deleted)";
  }
}

/** Records the user and their archived works as unavailable; returns how many works were newly marked. */
export async function markUnavailable(ctx: SourceContext, userid: string, state: UserState): Promise<number> {
  const marked = await ctx.transaction((repos) => repos.users.markUserUnavailable(userid, ARTIST_REASON[state], ctx.now()));
  ctx.counters.removed += marked.deviations;
  return marked.deviations;
}

/** Records a profile that answered: the user and any works marked for their absence are live again. */
export async function recordProfile(ctx: SourceContext, profile: Profile): Promise<void> {
  const counts = await ctx.transaction((repos) => repos.users.upsertProfiles([profile], ctx.now()));
  ctx.counters.changed += counts.changed + counts.revived;
}

/** What the daily check of unavailable artists did: how many came back, and how many it could not settle and why. */
export type Recheck = { back: number; unsettled: number; cause?: string };

/**
 * Asks again, at most daily, about every artist the mirror holds as unavailable, so their works come back to
 * life when their account does. An answer that settles nothing (judgeUserCheck) leaves the artist as marked,
 * asked again the next day; a throttle or a failing service ends the asking for this run.
 */
export async function recheckUnavailable(ctx: SourceContext): Promise<Recheck> {
  const asked = new Set<string>();
  const result: Recheck = { back: 0, unsettled: 0 };
  for (;;) {
    // Each answer records when it was asked (or brings the artist back), so the next read moves on.
    const due = (await ctx.repos.users.listUnavailableUsers(new Date(ctx.now().getTime() - RECHECK_UNAVAILABLE_MS), RECHECK_BATCH)).filter(
      (u) => !asked.has(u.userid),
    );
    for (const user of due) {
      asked.add(user.userid);
      let check: UserCheck;
      try {
        check = await checkUser(ctx.client, user.username);
      } catch (err) {
        const verdict = judgeUserCheck(err);
        result.unsettled++;
        result.cause ??= verdict.cause;
        if (verdict.stop) return result;
        // Left as it was, with the time it was asked: the next check is tomorrow's. Not marked again, which would also
        // mark removed a work of theirs seen live since.
        await ctx.repos.users.noteUnavailableChecked(user.userid, ctx.now());
        continue;
      }
      if (check.available) {
        await recordProfile(ctx, check.profile);
        result.back++;
      } else {
        await markUnavailable(ctx, user.userid, check.state);
      }
      ctx.checkpoint();
    }
    if (due.length === 0) break;
  }
  if (asked.size > 0) ctx.log.info({ asked: asked.size, ...result }, "asked again about unavailable artists");
  return result;
}
