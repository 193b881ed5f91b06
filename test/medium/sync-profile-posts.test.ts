// The profile-posts source through the real runner against the simulator: journals (with their text) and
// status updates in order; a quiet re-run costs the first page; /user/statuses is never called; when
// /user/profile/posts itself is gone the run degrades with the reason instead of failing.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DaClient } from "../../src/api/client.ts";
import { EndpointGoneError } from "../../src/api/errors.ts";
import type { GroundTruth } from "../../src/simulator/server.ts";
import type { SourceDefinition } from "../../src/sync/source.ts";
import { profilePostsSource } from "../../src/sync/sources/profile-posts.ts";
import { createSyncHarness, type SyncHarness, runSourceLater } from "../helpers/sync-harness.ts";

let h: SyncHarness;

// A fresh mirror and simulator per test: tests change the data upstream and count what a run finds.
beforeEach(async () => {
  // About 60 journals and 4 listed statuses: two pages of 50.
  h = await createSyncHarness({ sim: { dataset: { deviations: 600, statuses: 8 } }, sources: [profilePostsSource] });
});
afterEach(async () => {
  await h?.close();
});

function runLater(opts: { full?: boolean } = {}) {
  return runSourceLater(h, "profile_posts", opts);
}

type Dev = GroundTruth["deviations"] extends ReadonlyMap<string, infer V> ? V : never;
type Status = GroundTruth["statuses"][number];
type Post = { kind: "journal"; at: number; d: Dev } | { kind: "status"; at: number; s: Status };

/** The simulator's post list: the owner's visible journals and every other status, newest first. */
function expectedPosts(): Post[] {
  const t = h.sim.truth;
  const journals: Post[] = [...t.deviations.values()]
    .filter((d) => d.authorId === t.ownerId && d.kind === "journal" && !d.isDeleted && t.galleryFolders.some((f) => f.deviationIds.includes(d.deviationid)))
    .map((d) => ({ kind: "journal", at: d.publishedTime * 1000 + (d.numericId % 1000), d }));
  const statuses: Post[] = t.statuses
    .filter((s, i) => s.authorId === t.ownerId && i % 2 === 0)
    .map((s) => ({ kind: "status", at: Date.parse(s.ts.replace("+0000", "Z")) + 500, s }));
  return [...journals, ...statuses].sort((a, b) => b.at - a.at);
}

async function mirroredPosts() {
  const { rows } = await h.pool.query<{ kind: string; item_id: string; position: number }>(
    "SELECT kind::text AS kind, item_id, position FROM profile_posts WHERE owner_userid = $1 AND removed_at IS NULL ORDER BY position",
    [h.account.userId],
  );
  return rows;
}

function postRows() {
  return expectedPosts().map((p, position) => ({ kind: p.kind, item_id: p.kind === "journal" ? p.d.deviationid : p.s.statusid, position }));
}

describe(profilePostsSource.name, () => {
  it("mirrors journals and statuses in order on the first run", async () => {
    const { result, routes } = await runLater();
    expect(result.status).toBe("ok");
    expect(expectedPosts().length).toBeGreaterThan(50);
    expect(await mirroredPosts()).toEqual(postRows());

    const statuses = expectedPosts().flatMap((p) => (p.kind === "status" ? [p.s] : []));
    const { rows } = await h.pool.query("SELECT statusid, body, posted_at, author_userid FROM statuses ORDER BY posted_at DESC");
    expect(rows).toEqual(
      statuses.map((s) => ({ statusid: s.statusid, body: s.body, posted_at: new Date(s.ts.replace("+0000", "Z")), author_userid: s.authorId })),
    );

    const journals = expectedPosts().flatMap((p) => (p.kind === "journal" ? [p.d] : []));
    const { rows: devs } = await h.pool.query("SELECT deviationid, title, type::text AS type FROM deviations ORDER BY deviationid");
    expect(devs).toEqual(
      journals.map((d) => ({ deviationid: d.deviationid, title: d.title, type: "journal" })).sort((a, b) => a.deviationid.localeCompare(b.deviationid)),
    );
    const { rows: texts } = await h.pool.query("SELECT deviationid, html, is_empty FROM deviation_texts ORDER BY deviationid");
    expect(texts).toEqual(
      journals
        .map((d) => ({ deviationid: d.deviationid, html: d.text?.apiHtmlEmpty ? null : (d.text?.html ?? null), is_empty: d.text?.apiHtmlEmpty === true }))
        .sort((a, b) => a.deviationid.localeCompare(b.deviationid)),
    );
    const { rows: meta } = await h.pool.query("SELECT deviationid, description, tags FROM deviation_metadata ORDER BY deviationid");
    expect(meta).toEqual(
      journals
        .map((d) => ({ deviationid: d.deviationid, description: d.description, tags: [...new Set(d.tags)].sort() }))
        .sort((a, b) => a.deviationid.localeCompare(b.deviationid)),
    );
    expect(routes.filter((r) => r.includes("/user/statuses"))).toEqual([]);
  });

  it("costs at most two API calls when nothing changed upstream", async () => {
    // Up to date with upstream first, whatever ran before (or nothing did): then measure a run with no news.
    await runLater();
    const { result, calls, routes } = await runLater();
    expect(result.full).toBe(false);
    expect(calls, routes.join("\n")).toBeLessThanOrEqual(2);
    expect(result.counters).toEqual({ new: 0, changed: 0, removed: 0 });
  });

  it("picks up a new journal with its text and keeps the positions exact", async () => {
    await runLater(); // mirrored before the changes
    const added = h.sim.activity({ kind: "add_deviation", deviationKind: "journal", title: "Dear Diary" }) as { deviationid: string };
    const { result } = await runLater();
    expect(result.counters).toEqual({ new: 1, changed: 0, removed: 0 });
    expect(await mirroredPosts()).toEqual(postRows());
    expect((await mirroredPosts())[0]).toEqual({ kind: "journal", item_id: added.deviationid, position: 0 });
    const { rows } = await h.pool.query("SELECT deviationid FROM deviation_texts WHERE deviationid = $1", [added.deviationid]);
    expect(rows).toHaveLength(1);
    const { rows: history } = await h.pool.query("SELECT count(*)::int AS n FROM deviation_history");
    expect(history[0]?.n).toBe(0);
  });

  // docs/service-behaviour.md#tolerant-reading: a page skipped as unreadable is posts the walk did not see.
  it("a full walk that skipped a page it could not read marks no post removed", async () => {
    await runLater(); // mirrored whole
    h.sim.faults.add({ route: "/user/profile/posts$", kind: "wrong_shape", times: 2 });
    const { result } = await runLater({ full: true });
    expect(result.status).toBe("incomplete");
    expect(result.counters).toMatchObject({ removed: 0 });
    expect(await mirroredPosts()).toEqual(postRows());
  });

  it("degrades with the reason when /user/profile/posts is gone, without failing the run", async () => {
    const gone: SourceDefinition = {
      ...profilePostsSource,
      run: (ctx) => profilePostsSource.run({ ...ctx, client: withoutProfilePosts(ctx.client) }),
    };
    const harness = await createSyncHarness({ sources: [gone] });
    try {
      const result = await harness.runSource("profile_posts");
      expect(result.status).toBe("degraded");
      expect(result.reason).toBe("/user/profile/posts removed by the service (404 Api endpoint not found.)");
      const { rows } = await harness.pool.query("SELECT last_result::text AS result, unavailable_reason FROM sync_sources WHERE source = 'profile_posts'");
      expect(rows).toEqual([{ result: "degraded", unavailable_reason: result.reason }]);
    } finally {
      await harness.close();
    }
  });
});

/** The client as if the service had removed /user/profile/posts (the simulator has no such switch). */
function withoutProfilePosts(client: DaClient): DaClient {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === "profilePosts") {
        return () => ({
          truncation: undefined,
          [Symbol.asyncIterator]() {
            return {
              next: () =>
                Promise.reject(
                  new EndpointGoneError({
                    operation: "user.profile.posts",
                    status: 404,
                    error: "invalid_request",
                    errorDescription: "Api endpoint not found.",
                  }),
                ),
            };
          },
        });
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
