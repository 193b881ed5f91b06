// The client-credentials client is resolved only by a source that uses it: a user-only source costs no
// client token request, while the static source takes one and counts its calls.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { notesSource } from "../../src/sync/sources/notes.ts";
import { staticSource } from "../../src/sync/sources/static.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;
beforeAll(async () => {
  h = await createSyncHarness({ sources: [notesSource, staticSource] });
});
afterAll(async () => {
  await h?.close();
});

const clientTokenRequests = (since: number) =>
  h.sim.log().filter((e) => e.seq > since && e.route === "/oauth2/token" && (e.form.grant_type ?? e.query.grant_type) === "client_credentials").length;

describe("the public client of a sync run", () => {
  it("is not requested by a source that never calls public endpoints", async () => {
    const seq = h.lastSeq();
    const result = await h.runSource("notes");
    expect(result.status).toBe("ok");
    expect(clientTokenRequests(seq)).toBe(0);
  });

  it("is requested once by the static source, whose calls go with it and are counted", async () => {
    const seq = h.lastSeq();
    const result = await h.runSource("static", { full: true });
    expect(result.status).toBe("ok");
    expect(clientTokenRequests(seq)).toBe(1);
    const dataCalls = h.sim.log().filter((e) => e.seq > seq && e.route.includes("/data/"));
    expect(dataCalls.length).toBe(4);
    expect(dataCalls.every((e) => e.userId === undefined)).toBe(true);
    expect(result.apiCalls).toBe(4);
  });
});
