// What a folder walk (folder-walk.ts) settles at its end about the works it did not list: on a sweep, those
// that left every listing; on an incremental run, those that left a listing in the run (freshness.ts), and
// where no listing can say which went, every other work of the source. Each is asked about (vanished.ts);
// the answers decide which stay among the source's known ids, which leave them, and which are asked again
// at the next run because nothing was settled.
import type { SourceContext } from "../source.ts";
import type { FolderState, Run } from "./folder-spec.ts";
import type { FolderSyncResult } from "./folder-walk-types.ts";
import { resolveWorks, type Resolution } from "./vanished.ts";

export class KnownWorks {
  /** Found gone upstream in this run: they leave the known ids. */
  private readonly gone = new Set<string>();
  /** Not listed in this run but staying among the known ids (still there past a ceiling, or not settled). */
  private readonly kept = new Set<string>();
  /** Not settled yet, as this run leaves them (FolderState.unsettled). */
  private readonly unsettled = new Set<string>();
  private cause: string | undefined;
  private checked: FolderSyncResult["checked"];

  constructor(
    private readonly ctx: SourceContext,
    private readonly input: {
      ownerUserid: string;
      state: FolderState;
      /** What this run's listings showed (filled while the walk goes on). */
      seen: ReadonlySet<string>;
      /** Every work the source listed before this run; undefined after a crash lost them. */
      known: ReadonlySet<string> | undefined;
      /** The walk's list of operations the service removed: a removed lookup joins it. */
      removed: string[];
    },
  ) {}

  /** After a sweep that was not resumed: everything known that no listing showed, and what was not settled before. */
  async afterSweep(run: Run, resumed: boolean): Promise<void> {
    const { known, seen } = this.input;
    const unsettled = this.stillUnsettled();
    if (!known) return;
    if (resumed) {
      this.ctx.log.info("sweep resumed after an interruption: vanished deviations are checked at the next sweep");
      return;
    }
    const vanished = [...new Set([...known, ...unsettled])].filter((id) => !seen.has(id));
    if (vanished.length === 0) return;
    const resolution = await this.resolve(vanished, false);
    // Still there but unlisted: beyond an offset ceiling they may come back; otherwise forget them.
    if (run.truncated) for (const id of resolution.alive) this.kept.add(id);
  }

  /**
   * After an incremental run (freshness.ts): the works that left a listing in this run and were not listed
   * elsewhere, and those not settled before, are asked about; then, where the profile's count dropped by
   * more than the works that left account for (gone or not: an unfaved favourite lowers it too) or a folder
   * left the list, every other work of the source is.
   */
  async afterIncremental(run: Run): Promise<void> {
    const { known, seen, state } = this.input;
    const left = [...new Set(run.departed ?? [])].filter((id) => !seen.has(id));
    const local = [...new Set([...left, ...this.stillUnsettled()])].filter((id) => !seen.has(id));
    // Works that left their listing are mostly gone: looked up one by one, not through a metadata batch that
    // would leave them out anyway.
    const first = local.length > 0 ? await this.resolve(local, false) : undefined;
    const check = run.fullCheck;
    const reasons = [...(check?.reasons ?? [])];
    if (check && check.profileDrop > left.length) reasons.push(`the profile's count dropped by ${check.profileDrop}, ${left.length} left the listings`);
    let asked = local.length;
    let gone = first?.gone.length ?? 0;
    // A throttle or a failing service stops the asking: the count stays as it was, so the next run sees the
    // same drop and asks then. Works whose answer settled nothing are asked again one by one anyway.
    let stopped = first?.stopped === true || (reasons.length > 0 && !known);
    if (reasons.length > 0 && known && !stopped) {
      const asking = new Set(local);
      const rest = [...known].filter((id) => !seen.has(id) && !asking.has(id));
      this.ctx.log.info({ reasons, asking: rest.length }, "no listing says which works went: asking about every other work");
      const all = await this.resolve(rest, true);
      asked += rest.length;
      gone += all.gone.length;
      stopped = all.stopped;
    }
    if (!stopped && typeof check?.profileCount === "number") state.witnessCount = check.profileCount;
    if (reasons.length > 0 || asked > 0) this.checked = { reasons, asked, gone };
  }

  /**
   * The known ids as the run leaves them (sorted), with FolderState.unsettled set: a sweep's listings
   * replace them (`replace`), an incremental run's add to them; kept ones stay, gone ones leave.
   */
  knownAfter(replace: boolean): string[] | undefined {
    const { known, seen, state } = this.input;
    if (this.unsettled.size > 0) state.unsettled = [...this.unsettled].sort();
    else delete state.unsettled;
    const listed = replace ? seen : known ? new Set([...known, ...seen]) : undefined;
    if (!listed) return undefined;
    return [...new Set([...listed, ...this.kept])].filter((id) => !this.gone.has(id)).sort();
  }

  /** The part of the walk's result about works that may be gone. */
  outcome(): Pick<FolderSyncResult, "unsettled" | "checked"> {
    return {
      unsettled: { count: this.unsettled.size, ...(this.cause ? { cause: this.cause } : {}) },
      ...(this.checked ? { checked: this.checked } : {}),
    };
  }

  /** Asks about works that may be gone (vanished.ts) and keeps what the answers mean for the known ids. */
  private async resolve(ids: readonly string[], viaMetadata: boolean): Promise<Resolution> {
    const resolution = await resolveWorks(this.ctx, ids, { ownerUserid: this.input.ownerUserid, viaMetadata });
    for (const id of [...resolution.alive, ...resolution.gone]) this.unsettled.delete(id);
    for (const id of resolution.gone) this.gone.add(id);
    for (const id of resolution.unsettled) {
      this.kept.add(id);
      this.unsettled.add(id);
    }
    const removed = resolution.endpointGone;
    if (removed && !this.input.removed.includes(removed)) this.input.removed.push(removed);
    this.cause ??= resolution.cause;
    return resolution;
  }

  /** The works not settled before that this run did not list (a listed one is there): kept until settled. */
  private stillUnsettled(): string[] {
    const unsettled = (this.input.state.unsettled ?? []).filter((id) => !this.input.seen.has(id));
    for (const id of unsettled) {
      this.kept.add(id);
      this.unsettled.add(id);
    }
    return unsettled;
  }
}
