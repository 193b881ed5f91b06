// The "messages" source: notifications and messages — the unified /messages/feed, feedback (by type) and
// mentions, stacks expanded — with the users and deviations they are about, so messages join to them.
//
// Between sweeps a run reads the head of the stacked feed (the feed holds every message, newest first) and
// stops at the first page that is already mirrored and unchanged: one call when nothing happened. A stack
// is expanded only when it grew by more than its new top message. A full sweep walks the feedback and
// mentions listings (authoritative for a message's box), then the whole feed, expands every stack, and
// marks messages that no listing returned as removed.
import { z } from "zod";
import type { PageIterator } from "../../api/transport.ts";
import { isMissing } from "../../api/errors.ts";
import type { Deviation, Message, User } from "../../api/types.ts";
import type { MessageBox } from "../../db/message.repository.ts";
import { distinctDeviations, distinctUsers, type UpsertCounts } from "../../db/mirror-rows.ts";
import type { SyncRepos } from "../repos.ts";
import type { SourceContext, SourceDefinition, SourceOutcome } from "../source.ts";
import { DEFAULT_EVERY_MS } from "../source.ts";

/** `type` values of /messages/feedback (docs/service-behaviour.md#feedback-types). */
const FEEDBACK_TYPES = ["comments", "replies", "activity"] as const;
type Phase = "mentions" | `feedback:${(typeof FEEDBACK_TYPES)[number]}` | "feed";
const SWEEP_PHASES: readonly Phase[] = ["mentions", ...FEEDBACK_TYPES.map((t) => `feedback:${t}` as const), "feed"];
const BOXES: readonly MessageBox[] = ["feed", "feedback", "mentions"];

const MessagesStateSchema = z.object({
  /** stackid → the stack_count whose members are all mirrored (stacks of more than one message). */
  stacks: z.record(z.string(), z.number()).catch({}),
  /** An unfinished full sweep: when it started, its phase (index into SWEEP_PHASES) and where in it. */
  sweep: z.object({ startedAt: z.string(), phase: z.number().int().min(0), offset: z.number().int().nullish(), cursor: z.string().nullish() }).nullish(),
  /** Cursor of an unfinished incremental feed walk: the next run continues there before reading the head. */
  tail: z.string().nullish(),
});
type MessagesState = z.infer<typeof MessagesStateSchema>;

function readState(cursor: unknown): MessagesState {
  const parsed = MessagesStateSchema.safeParse(cursor ?? {});
  return parsed.success ? parsed.data : { stacks: {} };
}

/**
 * The box of a message seen in the unified feed, from its type; the feedback and mentions listings of a
 * full sweep are authoritative (a message keeps the box it was first recorded in).
 */
function boxOfFeedMessage(m: Message): MessageBox {
  const type = (m.type ?? "").toLowerCase();
  if (type.startsWith("mention")) return "mentions";
  if (/^(fave|favourite|watch|comment|reply|critique|collect|llama|badge)/.test(type)) return "feedback";
  return "feed";
}

/** The users and deviations a message points at, as the message carries them. */
function subjects(messages: readonly Message[]): { users: User[]; deviations: Deviation[] } {
  const users: Array<User | null | undefined> = [];
  const deviations: Array<Deviation | null | undefined> = [];
  for (const m of messages) {
    const s = m.subject;
    users.push(m.originator, s?.profile, m.profile, s?.comment?.user, m.comment?.user, s?.status?.author, m.status?.author);
    for (const d of [s?.deviation, m.deviation]) {
      deviations.push(d);
      users.push(d?.author);
    }
  }
  return { users: distinctUsers(users), deviations: distinctDeviations(deviations) };
}

/** One page of messages with their subjects, in boxes; counters updated. Returns the messages' counts. */
async function writeMessages(ctx: SourceContext, repos: SyncRepos, messages: ReadonlyArray<{ box: MessageBox; message: Message }>): Promise<UpsertCounts> {
  const at = ctx.now();
  const { users, deviations } = subjects(messages.map((m) => m.message));
  await repos.users.upsertUsers(users, at);
  await repos.deviations.upsertDeviations(deviations, at);
  const total: UpsertCounts = { inserted: 0, changed: 0, unchanged: 0 };
  for (const box of BOXES) {
    const inBox = messages.filter((m) => m.box === box).map((m) => m.message);
    if (inBox.length === 0) continue;
    const c = await repos.messages.upsertMessages(ctx.account.id, box, inBox, at);
    total.inserted += c.inserted;
    total.changed += c.changed;
    total.unchanged += c.unchanged;
  }
  ctx.counters.new += total.inserted;
  ctx.counters.changed += total.changed;
  return total;
}

const quiet = (c: UpsertCounts) => c.inserted === 0 && c.changed === 0;

/**
 * Mirrors the members of a stack (newest first): all of them (`whole`, in a sweep), or until a page is
 * already mirrored and unchanged. Members are committed before the listing page that showed the stack,
 * so a crash in between only repeats work. A stack that vanished meanwhile is skipped.
 */
async function mirrorStack(ctx: SourceContext, box: "feedback" | "mentions", top: Message & { stackid: string }, whole: boolean): Promise<void> {
  const { stackid } = top;
  const pages = box === "mentions" ? ctx.client.mentionsStack(stackid) : ctx.client.feedbackStack(stackid);
  try {
    for await (const page of pages) {
      // Members come unstacked: they get the stack's id, and its top message the stack's size as listed.
      const members = page.items.map((m) => ({
        box,
        message: { ...m, stackid: m.stackid ?? stackid, ...(m.messageid === top.messageid ? { stack_count: top.stack_count } : {}) },
      }));
      const counts = await ctx.transaction((repos) => writeMessages(ctx, repos, members));
      ctx.checkpoint();
      if (!whole && quiet(counts)) break;
    }
  } catch (err) {
    if (isMissing(err, { refusalMeansMissing: true })) {
      ctx.log.info({ stackid, box, err }, "message stack no longer listed; skipped");
      return;
    }
    throw err;
  }
}

type Walk = {
  ctx: SourceContext;
  state: MessagesState;
  /** Stacks expanded in this run (a stack shows up in a listing and in the feed). */
  expanded: Set<string>;
  sweep: boolean;
};

/** Expands the stacks shown on a page that need it: in a sweep every stack once, else stacks that grew by more than one. */
async function expandStacks(walk: Walk, entries: ReadonlyArray<{ box: MessageBox; message: Message }>): Promise<void> {
  for (const { box, message } of entries) {
    const stackid = message.stackid;
    const count = message.stack_count ?? 1;
    if (!stackid || count <= 1 || box === "feed" || walk.expanded.has(stackid)) continue;
    const known = walk.state.stacks[stackid];
    // A stack that grew by one has a new top message, which is this entry: nothing else to fetch.
    const needed = walk.sweep || known === undefined || count - known >= 2 || count < known;
    if (needed) await mirrorStack(walk.ctx, box, { ...message, stackid }, walk.sweep);
    walk.expanded.add(stackid);
    walk.state.stacks[stackid] = count;
  }
}

async function saveState(repos: SyncRepos, ctx: SourceContext, state: MessagesState): Promise<void> {
  await repos.syncState.saveSourceState(ctx.ref, { cursor: state });
}

/** A listing phase of a sweep (mentions or feedback of one type), from the saved offset. */
function listing(ctx: SourceContext, phase: Phase, startOffset: number): PageIterator<Message> {
  if (phase === "mentions") return ctx.client.mentions({ stack: true, startOffset });
  const type = phase.slice("feedback:".length);
  return ctx.client.feedback({ type, stack: true, startOffset });
}

async function fullSweep(ctx: SourceContext, state: MessagesState): Promise<SourceOutcome> {
  const resumed = state.sweep ?? null;
  const sweep = resumed ?? { startedAt: ctx.startedAt.toISOString(), phase: 0 };
  // Resuming keeps the stacks known so far; a sweep from the start rebuilds the map with the stacks it sees.
  const walk: Walk = { ctx, state: { ...state, stacks: resumed ? { ...state.stacks } : {} }, expanded: new Set(), sweep: true };
  await ctx.ensureFreshToken();
  for (let i = sweep.phase; i < SWEEP_PHASES.length; i++) {
    const phase = SWEEP_PHASES[i] as Phase;
    const sameSpot = resumed !== null && i === resumed.phase;
    if (phase === "feed") {
      const start = sameSpot ? resumed.cursor : undefined;
      for await (const page of ctx.client.messagesFeed({ stack: true, ...(start ? { startCursor: start } : {}) })) {
        const entries = page.items.map((message) => ({ box: boxOfFeedMessage(message), message }));
        await expandStacks(walk, entries);
        await ctx.transaction(async (repos) => {
          await writeMessages(ctx, repos, entries);
          await saveState(repos, ctx, { ...walk.state, sweep: { startedAt: sweep.startedAt, phase: i, cursor: page.nextCursor ?? null } });
        });
        ctx.checkpoint();
      }
      continue;
    }
    const box: MessageBox = phase === "mentions" ? "mentions" : "feedback";
    const startOffset = sameSpot ? (resumed.offset ?? 0) : 0;
    for await (const page of listing(ctx, phase, startOffset)) {
      const entries = page.items.map((message) => ({ box, message }));
      await expandStacks(walk, entries);
      const nextOffset = page.nextOffset ?? (page.offset ?? startOffset) + page.items.length;
      await ctx.transaction(async (repos) => {
        await writeMessages(ctx, repos, entries);
        await saveState(repos, ctx, { ...walk.state, sweep: { startedAt: sweep.startedAt, phase: i, offset: nextOffset } });
      });
      ctx.checkpoint();
    }
    // The phase is done: a resume starts with the next one.
    await saveState(ctx.repos, ctx, { ...walk.state, sweep: { startedAt: sweep.startedAt, phase: i + 1 } });
  }

  const since = new Date(sweep.startedAt);
  await ctx.transaction(async (repos) => {
    for (const box of BOXES) ctx.counters.removed += await repos.messages.markMissingMessagesRemoved(ctx.account.id, box, since, ctx.now());
    await saveState(repos, ctx, { stacks: walk.state.stacks, sweep: null, tail: null });
  });
  return { result: "ok", completeSweep: true };
}

/** Walks the stacked feed from `startCursor` (the head when absent) until a page is mirrored and unchanged. */
async function walkFeedUntilKnown(walk: Walk, startCursor: string | undefined): Promise<void> {
  const { ctx } = walk;
  for await (const page of ctx.client.messagesFeed({ stack: true, ...(startCursor ? { startCursor } : {}) })) {
    const entries = page.items.map((message) => ({ box: boxOfFeedMessage(message), message }));
    await expandStacks(walk, entries);
    const stop = await ctx.transaction(async (repos) => {
      const counts = await writeMessages(ctx, repos, entries);
      const done = quiet(counts) || !page.nextCursor || !page.hasMore;
      walk.state = { ...walk.state, tail: done ? null : page.nextCursor };
      await saveState(repos, ctx, walk.state);
      return done;
    });
    ctx.checkpoint();
    if (stop) break;
  }
}

async function incremental(ctx: SourceContext, state: MessagesState): Promise<SourceOutcome> {
  const walk: Walk = { ctx, state: { ...state, stacks: { ...state.stacks } }, expanded: new Set(), sweep: false };
  // An interrupted walk first goes on where it stopped, then the head is read for what came since.
  if (state.tail) await walkFeedUntilKnown(walk, state.tail);
  await walkFeedUntilKnown(walk, undefined);
  return { result: "ok" };
}

async function run(ctx: SourceContext): Promise<SourceOutcome> {
  const state = readState(ctx.state?.cursor);
  return ctx.full ? fullSweep(ctx, state) : incremental(ctx, state);
}

export const messagesSource: SourceDefinition = {
  name: "messages",
  everyMs: DEFAULT_EVERY_MS.messages,
  needsUser: true,
  run,
};
