// Every listing is a witness (docs/service-behaviour.md#folders-optional): what a sync concludes from a page the
// service answered oddly but within what it has been seen to do (docs/service-behaviour.md#offset-paging,
// #short-pages). The simulator pages by the book; a small proxy in front of it (test/helpers/hostile-proxy.ts)
// rewrites the paging fields of real pages, so the walk, its writes and its verdict run as in production.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { startHostileProxy, type HostileProxy } from "../helpers/hostile-proxy.ts";
import { createSyncHarness, runSourceLater, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;
let proxy: HostileProxy;

beforeEach(async () => {
  proxy = await startHostileProxy();
  // Folders of more than two pages of 24, so a page in the middle of one can be made to answer oddly.
  h = await createSyncHarness({
    sim: { dataset: { deviations: 200, galleryFolders: 3 } },
    sources: [gallerySource],
    apiBase: (sim) => {
      proxy.target = sim.url;
      return proxy.url;
    },
  });
});
afterEach(async () => {
  await h?.close();
  await proxy?.close();
});

/** Rewrites the JSON pages whose path (with query) matches. */
function rewritePages(match: RegExp, edit: (page: Record<string, unknown>) => void): void {
  proxy.rules.push({
    match,
    act: {
      kind: "rewrite",
      transform: (body) => {
        const page = JSON.parse(body) as Record<string, unknown>;
        edit(page);
        return JSON.stringify(page);
      },
    },
  });
}

/** Folder memberships the mirror holds as current, "folderid deviationid", sorted. */
async function liveMembers(): Promise<string[]> {
  const { rows } = await h.pool.query<{ m: string }>("SELECT folderid || ' ' || deviationid AS m FROM folder_members WHERE removed_at IS NULL ORDER BY 1");
  return rows.map((r) => r.m);
}

describe("offset pages that say there is more", () => {
  // A next_offset that repeats the page's own offset, or goes back, while has_more is true: the service still has
  // more. Ending the walk there took every member after that page for gone from its folder, and the sweep said "ok".
  it("a next_offset that repeats or goes back is passed by the items received: no member leaves its folder", async () => {
    expect((await runSourceLater(h, "gallery")).result.status).toBe("ok");
    const before = await liveMembers();
    rewritePages(/\/gallery\/(?!folders|all)[^?]*\?.*\boffset=24\b/, (page) => {
      if (page.has_more === true) page.next_offset = 24;
    });
    rewritePages(/\/gallery\/all\?.*\boffset=24\b/, (page) => {
      if (page.has_more === true) page.next_offset = "0";
    });
    const { result, routes } = await runSourceLater(h, "gallery", { full: true });
    // The rewrites were met: folders and the "all" view longer than two pages.
    expect(proxy.stats.applied[0]).toBeGreaterThan(0);
    expect(proxy.stats.applied[1]).toBe(1);
    expect(await liveMembers()).toEqual(before);
    expect(result.status).toBe("ok");
    // Nothing left a listing, so nothing was asked about.
    expect(routes.filter((r) => r.startsWith("/api/v1/oauth2/deviation/{deviationid}"))).toEqual([]);
  }, 60_000);
});
