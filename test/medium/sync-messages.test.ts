// The messages source through the real runner against the simulator: a first sync mirrors every message
// (feed, feedback, mentions, stacks expanded) field by field, a quiet re-run costs one call, and new
// messages are picked up exactly.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { GroundTruth } from "../../src/simulator/dataset.ts";

type SimMessage = GroundTruth["messages"][number];
import { messagesSource } from "../../src/sync/sources/messages.ts";
import { createSyncHarness, type SyncHarness, runSourceLater } from "../helpers/sync-harness.ts";

let h: SyncHarness;

/** Runs the source a minute of simulated time after the previous run (the simulator's clock is frozen). */
async function runLater(opts: { full?: boolean } = {}) {
  h.sim.clock.advance(60_000);
  return h.runSource("messages", opts);
}

/**
 * A fresh mirror and simulator of `messages` messages per test of the describe that calls it: tests change the
 * data upstream and count what a run finds.
 */
function freshWorldEach(messages: number): void {
  beforeEach(async () => {
    h = await createSyncHarness({ sim: { dataset: { messages } }, sources: [messagesSource] });
  });
  afterEach(async () => {
    await h?.close();
  });
}

type MessageRow = {
  messageid: string;
  box: string;
  type: string | null;
  ts: Date | null;
  stackid: string | null;
  is_new: boolean | null;
  orphaned: boolean | null;
  originator_userid: string | null;
  subject_deviationid: string | null;
  subject_commentid: string | null;
  html: string | null;
  removed_at: Date | null;
};

async function mirrored(): Promise<Map<string, MessageRow>> {
  const { rows } = await h.pool.query<MessageRow>(
    `SELECT messageid, box, type, ts, stackid, is_new, orphaned, originator_userid, subject_deviationid,
            subject_commentid, html, removed_at
     FROM messages WHERE account_id = $1`,
    [h.account.id],
  );
  return new Map(rows.map((r) => [r.messageid, r]));
}

const simTime = (iso: string) => new Date(iso.replace(/\+0000$/, "Z"));

/** What the mirror should hold for a message of the simulator's world. */
function expected(m: SimMessage, stackSizes: Map<string, number>) {
  return {
    messageid: m.messageid,
    box: m.box,
    type: m.type,
    ts: simTime(m.ts),
    // The service names a stack only when it folds more than one message.
    stackid: (stackSizes.get(m.stackid) ?? 1) > 1 ? m.stackid : null,
    is_new: m.isNew,
    originator_userid: m.originatorId,
    subject_deviationid: m.subjectDeviationId,
    subject_commentid: m.subjectCommentId,
    html: m.html,
    removed_at: null,
  };
}

function actual(r: MessageRow) {
  const { orphaned: _orphaned, ...rest } = r;
  return rest;
}

function stackSizes(messages: readonly SimMessage[]): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const m of messages) sizes.set(m.stackid, (sizes.get(m.stackid) ?? 0) + 1);
  return sizes;
}

describe("messages source, in a 1 000-message world", () => {
  // 'picks up exactly' needs this world: in the 200-message world below, its new fave's stack costs a third call.
  freshWorldEach(1000);

  it("mirrors every message of a 1 000-message world, field by field, with its subjects", async () => {
    const result = await runLater();

    expect(result.status).toBe("ok");
    expect(result.full).toBe(true);
    const truth = h.sim.truth.messages;
    expect(truth.length).toBe(1000);
    const rows = await mirrored();
    expect([...rows.keys()].sort()).toEqual(truth.map((m) => m.messageid).sort());
    const sizes = stackSizes(truth);
    for (const m of truth) expect(actual(rows.get(m.messageid)!)).toEqual(expected(m, sizes));
    expect(result.counters).toEqual({ new: 1000, changed: 0, removed: 0 });

    // Subjects are linked: every originator and subject deviation is a mirrored row.
    const { rows: dangling } = await h.pool.query(
      `SELECT m.messageid FROM messages m
       LEFT JOIN users u ON u.userid = m.originator_userid
       LEFT JOIN deviations d ON d.deviationid = m.subject_deviationid
       WHERE m.account_id = $1 AND (u.userid IS NULL OR (m.subject_deviationid IS NOT NULL AND d.deviationid IS NULL))`,
      [h.account.id],
    );
    expect(dangling).toEqual([]);
  });

  it("picks up exactly the new messages: a fave joining a stack, a comment and a mention", async () => {
    await runLater(); // mirrored before the changes
    const before = await mirrored();
    const added = [
      h.sim.activity({ kind: "new_message", type: "fave" }),
      h.sim.activity({ kind: "new_message", type: "comment" }),
      h.sim.activity({ kind: "new_message", type: "mention.deviation" }),
    ].map((a) => a.messageid as string);

    const seq = h.lastSeq();
    const result = await runLater();

    // The feed's head and the page after it; the fave's stack grew by its new top message only.
    expect(h.apiCallsSince(seq)).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 3, changed: 0, removed: 0 });
    const rows = await mirrored();
    expect([...rows.keys()].filter((id) => !before.has(id)).sort()).toEqual([...added].sort());
    const truth = h.sim.truth.messages;
    const sizes = stackSizes(truth);
    for (const id of added) {
      const m = truth.find((x) => x.messageid === id)!;
      expect(actual(rows.get(id)!)).toEqual(expected(m, sizes));
    }
  });
});

describe("messages source, in a 200-message world", () => {
  // Every box still spans pages (feedback lists 5 a page), and the first sync each test makes costs a fifth of
  // a 1 000-message world's.
  freshWorldEach(200);

  it("costs at most 2 API calls when nothing changed", async () => {
    // Up to date with upstream first, whatever ran before (or nothing did): then measure a run with no news.
    await runLater();
    const { result, calls } = await runSourceLater(h, "messages");

    expect(result.full).toBe(false);
    expect(result.status).toBe("ok");
    expect(calls).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });
  });

  it("expands a stack that grew by more than its new top message", async () => {
    await runLater(); // mirrored before the changes
    const added = [h.sim.activity({ kind: "new_message", type: "watch" }), h.sim.activity({ kind: "new_message", type: "watch" })].map(
      (a) => a.messageid as string,
    );
    const seq = h.lastSeq();
    const result = await runLater();
    const routes = h.sim
      .log()
      .filter((e) => e.seq > seq)
      .map((e) => e.route.replace("/api/v1/oauth2", ""));

    expect(result.counters).toEqual({ new: 2, changed: 0, removed: 0 });
    expect(routes).toContain("/messages/feedback/{stackid}");
    const rows = await mirrored();
    const truth = h.sim.truth.messages;
    const sizes = stackSizes(truth);
    for (const id of added) expect(actual(rows.get(id)!)).toEqual(expected(truth.find((x) => x.messageid === id)!, sizes));
  });

  it("a full sweep marks a message deleted upstream as removed, and only that one", async () => {
    await runLater(); // mirrored before the changes
    const victim = h.sim.truth.messages.find((m) => m.type === "comment")!;
    const token = h.sim.issueUserToken().access_token;
    const res = await fetch(`${h.sim.apiUrl}/messages/delete`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ messageid: victim.messageid }),
    });
    expect(res.status).toBe(200);

    const result = await runLater({ full: true });
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 1 });
    const rows = await mirrored();
    const removed = [...rows.values()].filter((r) => r.removed_at !== null).map((r) => r.messageid);
    expect(removed).toEqual([victim.messageid]);
  });

  // docs/service-behaviour.md#tolerant-reading: a page skipped as unreadable is messages that listing did not show; the
  // sweep also reads the unified feed, which lists them again, so none of them is marked removed.
  it("a full sweep that skipped a page of feedback it could not read marks no message removed", async () => {
    const route = "/messages/feedback$";
    await runLater(); // mirrored whole
    h.sim.faults.add({ route, kind: "wrong_shape", times: 2 });
    const result = await runLater({ full: true });
    expect(result.status).toBe("incomplete");
    expect(result.counters).toMatchObject({ removed: 0 });
    expect([...(await mirrored()).values()].filter((r) => r.removed_at !== null)).toEqual([]);
  });
});

describe("messages source interrupted mid-sweep", () => {
  let r: SyncHarness;
  beforeAll(async () => {
    r = await createSyncHarness({ sim: { dataset: { messages: 300 } }, sources: [messagesSource] });
  });
  afterAll(async () => {
    await r?.close();
  });

  it("resumes where it stopped and ends with every message, none marked removed", async () => {
    const routesSince = (seq: number) =>
      r.sim
        .log()
        .filter((e) => e.seq > seq)
        .map((e) => e.route.replace("/api/v1/oauth2", ""));
    const stop = new AbortController();
    let seq = r.lastSeq();
    const watcher = setInterval(() => {
      if (routesSince(seq).filter((x) => x === "/messages/feedback").length >= 6) stop.abort();
    }, 1);
    r.sim.clock.advance(60_000);
    await expect(r.runSource("messages", { signal: stop.signal })).rejects.toThrow();
    clearInterval(watcher);
    const firstMentions = routesSince(seq).filter((x) => x === "/messages/mentions").length;
    expect(firstMentions).toBeGreaterThan(0);

    seq = r.lastSeq();
    r.sim.clock.advance(60_000);
    const result = await r.runSource("messages");
    expect(result.full).toBe(true);
    expect(result.status).toBe("ok");
    // The mentions phase was finished before the interruption: the resumed sweep does not list it again.
    expect(routesSince(seq).filter((x) => x === "/messages/mentions")).toEqual([]);

    const { rows } = await r.pool.query<{ messageid: string; removed_at: Date | null }>("SELECT messageid, removed_at FROM messages WHERE account_id = $1", [
      r.account.id,
    ]);
    expect(rows.map((x) => x.messageid).sort()).toEqual(r.sim.truth.messages.map((m) => m.messageid).sort());
    expect(rows.filter((x) => x.removed_at !== null)).toEqual([]);
  });
});
