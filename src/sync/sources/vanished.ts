// Works that may be gone upstream: those that left every listing of a sweep, and those a freshness check
// asks about (freshness.ts). Each is asked for, 50 at a time through /deviation/metadata when that is
// cheaper, then one by one through /deviation/{deviationid}; the answer decides between "still there",
// "gone" (deleted or unavailable, recorded with the answer itself) and "not settled yet" (asked again at
// the next run). Reading of the answers: docs/service-behaviour.md#deleted-deviation-lookup and
// #metadata-deleted-id. A gone work whose author is suspended, deactivated or not found is marked with the
// author's state instead (docs/service-behaviour.md#user-error-codes).
import { failureWords, isApiError, type ApiError } from "../../api/errors.ts";
import type { Metadata } from "../../api/types.ts";
import type { GoneDeviation } from "../../db/deviation.repository.ts";
import type { SourceContext } from "../source.ts";
import { checkUser, judgeUserCheck, markUnavailable } from "./user-state.ts";

/** What the service said about a work it no longer gives: kept in deviations.removed_answer. */
export type ServiceAnswer = {
  status: number;
  error?: string | null;
  error_code?: number | null;
  error_description?: string | null;
  is_deleted?: true;
};

export type LookupVerdict =
  | { kind: "gone"; reason: GoneDeviation["reason"]; answer: ServiceAnswer }
  /**
   * Not an answer about the work: it stays as it is and is asked again at the next run. `stop`: asking about
   * the others now would meet the same (a throttle, no answer). `alone`: the failure may be this work's own (a
   * 5xx, an answer read twice and kept as unreadable): the others are still asked, until a second in a row
   * says the service is failing (Asking.unsettle).
   */
  | { kind: "unsettled"; cause: string; stop: boolean; endpointGone?: string; alone?: true };

/** The is_deleted stub /deviation/{deviationid} may answer with (docs/service-behaviour.md#deleted-deviation-lookup). */
export const STUB_ANSWER: ServiceAnswer = { status: 200, is_deleted: true };

/**
 * What a failed /deviation/{deviationid} says about the work (pure; docs/service-behaviour.md#deleted-deviation-lookup).
 * Gone: the answer says not found (`not_found`: an error_code the catalogue maps to it, or a 404 that carries
 * an error_code), then "deleted"; or any other 400 invalid_request refusal, with any error_code or none,
 * then "unavailable". Not settled: throttles, 5xx, unreadable answers, no answer, the lookup itself
 * removed, other refusals. What concerns the account rather than the work (a rejected token, a missing
 * scope) and anything that is not the service's answer is thrown on.
 */
export function judgeLookup(err: unknown): LookupVerdict {
  if (!isApiError(err)) throw err;
  switch (err.kind) {
    case "invalid_token":
    case "insufficient_scope":
      throw err;
    case "not_found":
      return { kind: "gone", reason: "deleted", answer: answerOf(err) };
    case "gone":
      // Each id is still asked: one such answer costs nothing to wait for, and a stray one must not hide the rest.
      return { kind: "unsettled", cause: `${err.operation} removed by the service (404 Api endpoint not found.)`, stop: false, endpointGone: err.operation };
    case "throttled":
    case "network":
      return { kind: "unsettled", cause: failureWords(err), stop: true };
    case "server":
      // 500s have been seen on single objects (docs/service-behaviour.md#server-5xx).
      return { kind: "unsettled", cause: failureWords(err), stop: false, alone: true };
    case "malformed":
      // Read twice and kept (`final`), the answer may be this work's own; one cut short is the service failing.
      return err.final
        ? { kind: "unsettled", cause: failureWords(err), stop: false, alone: true }
        : { kind: "unsettled", cause: failureWords(err), stop: true };
    default:
      if (err.status === 400 && err.error === "invalid_request") return { kind: "gone", reason: "unavailable", answer: answerOf(err) };
      return { kind: "unsettled", cause: failureWords(err), stop: false };
  }
}

function answerOf(err: ApiError): ServiceAnswer {
  return { status: err.status ?? 0, error: err.error ?? null, error_code: err.errorCode ?? null, error_description: err.errorDescription ?? null };
}

export type Resolution = {
  /** Still there: the metadata or the lookup answered with the work. */
  alive: string[];
  /** Marked gone in this run (deleted, unavailable or with their author's state). */
  gone: string[];
  /** Not settled: left as they are, to be asked again at the next run. */
  unsettled: string[];
  /** Why the first of them could not be settled, in words. */
  cause?: string;
  /** The operation the service removed (the lookup), when that is why. */
  endpointGone?: string;
  /** A throttle or a failing service ended the asking: some works were not asked about at all. */
  stopped: boolean;
};

export type ResolveOptions = {
  /** The owner of the listings; never asked about as an author. */
  ownerUserid: string;
  /**
   * Ask /deviation/metadata first, 50 ids a call, and look up only the ids a batch leaves out (a freshness
   * check of works that are mostly still there). Without it every id is looked up (works that left every
   * listing of a sweep, which the metadata would mostly leave out anyway).
   */
  viaMetadata: boolean;
};

/** Ids per /deviation/metadata call (the service's maximum without ext_*: docs/service-behaviour.md#metadata-batch). */
const METADATA_BATCH = 50;

/** Asks about works that may be gone and records what the answers say. See the file's first lines. */
export async function resolveWorks(ctx: SourceContext, ids: readonly string[], options: ResolveOptions): Promise<Resolution> {
  const asking = new Asking(ctx);
  if (ids.length === 0) return asking.result([]);
  const lookups = options.viaMetadata ? await asking.metadataFirst([...new Set(ids)]) : [...new Set(ids)];
  await asking.lookUp(lookups);
  const gone = await asking.record(options.ownerUserid);
  ctx.log.info(
    { asked: ids.length, alive: asking.alive.length, gone: gone.length, unsettled: asking.unsettled.length, cause: asking.cause },
    "asked about works that may be gone upstream",
  );
  return asking.result(gone);
}

/** One resolution's answers as they come in. */
class Asking {
  readonly alive: string[] = [];
  readonly unsettled: string[] = [];
  cause: string | undefined;
  endpointGone: string | undefined;
  /** Gone by the answer, before the author check. */
  private readonly refused: GoneDeviation[] = [];
  private readonly stubs: GoneDeviation[] = [];
  /** Authors of works still there that left every listing: they may be why (docs/service-behaviour.md#gone-author-deviation). */
  private readonly aliveAuthors = new Map<string, string>();
  /** The author of each such work, by its id. */
  private readonly aliveBy = new Map<string, string>();
  private stopped = false;
  /** Failures that may be a work's own (LookupVerdict `alone`) in a row, since the last answer that settled a work. */
  private failing = 0;

  constructor(private readonly ctx: SourceContext) {}

  /** The ids the metadata batches left out (or could not be asked with); the answers kept as metadata. */
  async metadataFirst(ids: string[]): Promise<string[]> {
    const leftOut: string[] = [];
    for (let i = 0; i < ids.length; i += METADATA_BATCH) {
      const batch = ids.slice(i, i + METADATA_BATCH);
      if (this.stopped) {
        this.unsettled.push(...batch);
        continue;
      }
      let answered: { metadata: Metadata[]; missing: string[] };
      try {
        answered = { metadata: [], missing: [] };
        for await (const b of this.ctx.client.deviationMetadata(batch)) {
          answered.metadata.push(...b.metadata);
          answered.missing.push(...b.missing);
        }
      } catch (err) {
        const verdict = judgeLookup(err);
        // A refused batch leaves out every id in it (docs/service-behaviour.md#metadata-deleted-id): the lookup
        // decides. Anything else (the metadata endpoint removed included) is asked again at the next run.
        if (verdict.kind === "gone") leftOut.push(...batch);
        else this.unsettle(batch, verdict);
        continue;
      }
      this.failing = 0;
      this.alive.push(...answered.metadata.map((m) => m.deviationid));
      leftOut.push(...answered.missing);
      // A free refresh of what the batch answered (descriptions and tag edits recorded as history).
      const counts = await this.ctx.transaction((repos) => repos.deviations.upsertMetadata(answered.metadata, this.ctx.now()));
      this.ctx.counters.changed += counts.changed;
      this.ctx.checkpoint();
    }
    return leftOut;
  }

  /** One /deviation/{deviationid} per id, until an answer says asking the others now is pointless. */
  async lookUp(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      if (this.stopped) {
        this.unsettled.push(id);
        continue;
      }
      try {
        // One attempt: what it cannot settle now is asked again at the next run.
        const d = await this.ctx.client.deviation(id, { once: true });
        this.failing = 0;
        if (d.is_deleted === true) this.stubs.push({ deviationid: id, reason: "deleted", answer: STUB_ANSWER });
        else {
          this.alive.push(id);
          if (d.author?.userid) {
            this.aliveAuthors.set(d.author.userid, d.author.username);
            this.aliveBy.set(id, d.author.userid);
          }
        }
      } catch (err) {
        const verdict = judgeLookup(err);
        if (verdict.kind === "unsettled") this.unsettle([id], verdict);
        else {
          this.failing = 0;
          this.refused.push({ deviationid: id, reason: verdict.reason, answer: verdict.answer });
        }
      }
    }
  }

  private unsettle(ids: readonly string[], verdict: Extract<LookupVerdict, { kind: "unsettled" }>): void {
    this.unsettled.push(...ids);
    this.cause ??= verdict.cause;
    this.endpointGone ??= verdict.endpointGone;
    this.failing = verdict.alone ? this.failing + 1 : 0;
    if (verdict.stop || this.failing >= 2) this.stopped = true;
  }

  /**
   * The authors first: a work refused with its author suspended, deactivated or not found is marked with the
   * author's state (every work of theirs is), never as deleted. Then the rest, with the answers. Returns
   * the ids marked.
   */
  async record(ownerUserid: string): Promise<string[]> {
    const { ctx } = this;
    const authors = new Map(this.aliveAuthors);
    const refusedAuthors = await ctx.repos.deviations.findAuthors(this.refused.map((r) => r.deviationid));
    for (const a of refusedAuthors) authors.set(a.userid, a.username);
    authors.delete(ownerUserid);
    authors.delete(ctx.account.userId);
    const { unavailable, undecided } = await this.checkAuthors(authors);
    const byAuthor = new Map(refusedAuthors.map((a) => [a.deviationid, a.userid]));
    const authorOf = (id: string) => byAuthor.get(id) ?? this.aliveBy.get(id) ?? "";
    // Works whose author's check settled nothing are asked about again at the next run, with their author.
    const waiting = [...this.refused.map((r) => r.deviationid), ...this.alive].filter((id) => undecided.has(authorOf(id)));
    this.unsettled.push(...waiting);
    this.alive.splice(0, this.alive.length, ...this.alive.filter((id) => !undecided.has(authorOf(id))));
    const refused = this.refused.filter((r) => !undecided.has(authorOf(r.deviationid)));
    const withAuthor = refused.filter((r) => unavailable.has(authorOf(r.deviationid)));
    const gone = [...this.stubs, ...refused.filter((r) => !unavailable.has(authorOf(r.deviationid)))];
    await ctx.transaction(async (repos) => {
      ctx.counters.removed += await repos.deviations.markDeviationsGone(gone, ctx.now());
    });
    return [...gone, ...withAuthor].map((g) => g.deviationid);
  }

  /** Each author's state, marked where they are unavailable; `undecided`: those whose check settled nothing. */
  private async checkAuthors(authors: ReadonlyMap<string, string>): Promise<{ unavailable: Set<string>; undecided: Set<string> }> {
    const unavailable = new Set<string>();
    const undecided = new Set<string>();
    let stop = false;
    for (const [userid, username] of authors) {
      if (stop) {
        undecided.add(userid);
        continue;
      }
      let check: Awaited<ReturnType<typeof checkUser>>;
      try {
        check = await checkUser(this.ctx.client, username);
      } catch (err) {
        const verdict = judgeUserCheck(err);
        this.cause ??= `${verdict.cause} from an author's profile`;
        stop = verdict.stop;
        undecided.add(userid);
        continue;
      }
      if (check.available) continue;
      unavailable.add(userid);
      await markUnavailable(this.ctx, userid, check.state);
    }
    return { unavailable, undecided };
  }

  result(gone: string[]): Resolution {
    return {
      alive: this.alive,
      gone,
      unsettled: this.unsettled,
      stopped: this.stopped,
      ...(this.cause ? { cause: this.cause } : {}),
      ...(this.endpointGone ? { endpointGone: this.endpointGone } : {}),
    };
  }
}
