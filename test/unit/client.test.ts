// DaClient builds the requests the catalogue promises (method, path, query vs form, defaults, batching,
// clearing rules), checked against a recording ApiTransport; no HTTP here (test/http covers the wire).
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CATALOGUE, operation } from "../../src/api/catalogue.ts";
import { DaClient, WRITE_OPERATIONS, journalUpdateForm, responseSchema, type JournalFields } from "../../src/api/client.ts";
import type { ApiRequest, ApiTransport, CursorPagingOptions, OffsetPagingOptions, Page, PageIterator } from "../../src/api/transport.ts";

type Recorded =
  | { kind: "request"; req: ApiRequest }
  | { kind: "offset"; req: ApiRequest; options: OffsetPagingOptions }
  | { kind: "cursor"; req: ApiRequest; options: CursorPagingOptions };

/** Answers every request with `reply(req)` run through the caller's schema; listings yield one empty page. */
function recordingTransport(reply: (req: ApiRequest) => unknown = () => ({ success: true })) {
  const calls: Recorded[] = [];
  const emptyPages = <T>(): PageIterator<T> => ({
    truncation: undefined,
    skipped: { pages: 0, items: 0 },
    async *[Symbol.asyncIterator](): AsyncGenerator<Page<T>> {
      yield { items: [], hasMore: false, raw: {} };
    },
  });
  const transport: ApiTransport = {
    async request<S extends z.ZodType>(req: ApiRequest, schema: S): Promise<z.infer<S>> {
      calls.push({ kind: "request", req });
      return schema.parse(reply(req));
    },
    async requestItems<S extends z.ZodType>(req: ApiRequest, key: string, item: S) {
      calls.push({ kind: "request", req });
      const body = reply(req) as Record<string, unknown>;
      return { body, items: z.array(item).parse(body[key] ?? []) };
    },
    paginateOffset<S extends z.ZodType>(req: ApiRequest, _item: S, options: OffsetPagingOptions) {
      calls.push({ kind: "offset", req, options });
      return emptyPages<z.infer<S>>();
    },
    paginateCursor<S extends z.ZodType>(req: ApiRequest, _item: S, options: CursorPagingOptions) {
      calls.push({ kind: "cursor", req, options });
      return emptyPages<z.infer<S>>();
    },
  };
  return { transport, calls };
}

const ids = (n: number) => Array.from({ length: n }, (_, i) => `D-${String(i).padStart(3, "0")}`);

describe(DaClient.name, () => {
  it("builds offset listings from the catalogue: path, query, mature_content for user tokens, max page size", () => {
    const { transport, calls } = recordingTransport();
    const client = new DaClient(transport);
    client.galleryFolder("F/1", { username: "spyed", mode: "newest" });
    client.galleryFolders({ username: "spyed", calculate_size: true });
    client.deviationComments("D-1", { maxdepth: 5, limit: 10 });
    expect(calls[0]).toEqual({
      kind: "offset",
      req: { operation: "gallery.folder", method: "GET", path: "/gallery/F%2F1", query: { username: "spyed", mode: "newest", mature_content: true } },
      options: { limit: 24, itemsKey: "results" },
    });
    expect(calls[1]).toMatchObject({ options: { limit: 50 }, req: { query: { username: "spyed", calculate_size: true, mature_content: true } } });
    expect(calls[2]).toMatchObject({ req: { path: "/comments/deviation/D-1", query: { maxdepth: 5 } }, options: { limit: 10, itemsKey: "thread" } });
  });

  it("leaves mature_content out for client tokens and respects an explicit value", () => {
    const { transport, calls } = recordingTransport();
    new DaClient(transport, { tokenKind: "client" }).galleryAll({ username: "spyed" });
    new DaClient(transport).galleryAll({ username: "spyed", mature_content: false });
    expect(calls[0]?.req.query).toEqual({ username: "spyed" });
    expect(calls[1]?.req.query).toEqual({ username: "spyed", mature_content: false });
  });

  it("builds cursor listings with the items key and limit of the catalogue", () => {
    const { transport, calls } = recordingTransport();
    const client = new DaClient(transport);
    client.profilePosts({ username: "spyed", startCursor: "abc" });
    client.messagesFeed({ stack: false });
    client.feedHome();
    expect(calls[0]).toMatchObject({
      kind: "cursor",
      req: { path: "/user/profile/posts", query: { username: "spyed", mature_content: true } },
      options: { itemsKey: "results", limit: 50, startCursor: "abc" },
    });
    expect(calls[1]).toMatchObject({ req: { path: "/messages/feed", query: { stack: false } }, options: { itemsKey: "results" } });
    expect(calls[2]).toMatchObject({ req: { path: "/feed/home" }, options: { itemsKey: "items" } });
  });

  it("sends POST reads and writes as form bodies, state-changing GETs as queries", async () => {
    const { transport, calls } = recordingTransport((req) =>
      req.operation === "user.whois" ? { results: [] } : req.operation === "collections.fave" ? { success: true, favourites: 3 } : { success: true },
    );
    const client = new DaClient(transport);
    await client.whois(["a", "b"], { expand: ["user.details", "user.geo"] });
    await client.fave("D-1", { folderids: ["C-1"] });
    await client.unwatch("some user");
    expect(calls[0]?.req).toEqual({
      operation: "user.whois",
      method: "POST",
      path: "/user/whois",
      form: { usernames: ["a", "b"], expand: "user.details,user.geo" },
    });
    expect(calls[1]?.req).toEqual({
      operation: "collections.fave",
      method: "POST",
      path: "/collections/fave",
      form: { deviationid: "D-1", folderid: ["C-1"] },
    });
    expect(calls[2]?.req).toEqual({ operation: "user.friends.unwatch", method: "GET", path: "/user/friends/unwatch/some%20user", query: {} });
  });

  it("watch sends all eight watch[...] flags", async () => {
    const { transport, calls } = recordingTransport();
    await new DaClient(transport).watch("spyed", { friend: true, scraps: false });
    expect(calls[0]?.req.form).toEqual({
      "watch[friend]": true,
      "watch[deviations]": true,
      "watch[journals]": true,
      "watch[forum_threads]": true,
      "watch[critiques]": true,
      "watch[scraps]": false,
      "watch[activity]": true,
      "watch[collections]": true,
    });
  });

  it("fetches metadata in batches of 50 (10 with ext_*), in the caller's order, reporting missing ids", async () => {
    const { transport, calls } = recordingTransport((req) => {
      const asked = ((req.query?.deviationids ?? []) as string[]).filter((id) => id !== "D-007");
      return { metadata: asked.reverse().map((deviationid) => ({ deviationid: deviationid.toLowerCase(), title: deviationid })) };
    });
    const client = new DaClient(transport);
    const batches = [];
    for await (const batch of client.deviationMetadata([...ids(120), "D-001"])) batches.push(batch);
    expect(batches.map((b) => b.ids.length)).toEqual([50, 50, 20]);
    expect(batches[0]?.metadata.map((m) => m.title)).toEqual(ids(50).filter((id) => id !== "D-007"));
    expect(batches[0]?.missing).toEqual(["D-007"]);
    expect(calls[0]?.req).toMatchObject({ method: "GET", path: "/deviation/metadata", query: { mature_content: true } });

    calls.length = 0;
    const all = await client.deviationMetadataAll(ids(25), { ext_stats: true, ext_submission: false });
    expect(calls.map((c) => ((c.req.query?.deviationids ?? []) as string[]).length)).toEqual([10, 10, 5]);
    expect(calls[0]?.req.query).toMatchObject({ ext_stats: true, ext_submission: false });
    expect(all).toHaveLength(24);
  });

  it("journalUpdate sends every field, keeps the cover unless changed, and resets it on null", async () => {
    const current: JournalFields = {
      title: "Old",
      tags: ["a", "b"],
      is_mature: false,
      allow_comments: true,
      license: { creative_commons: true, commercial: "no", modify: "share" },
      cover_image_deviation_id: "COVER-1",
    };
    expect(journalUpdateForm(current, { title: "New" })).toEqual({
      title: "New",
      tags: ["a", "b"],
      is_mature: false,
      allow_comments: true,
      "license_options[creative_commons]": true,
      "license_options[commercial]": "no",
      "license_options[modify]": "share",
      cover_image_deviation_id: "COVER-1",
    });
    const reset = journalUpdateForm(current, { cover_image_deviation_id: null });
    expect(reset.reset_cover_image_deviation_id).toBe(true);
    expect(reset.cover_image_deviation_id).toBeUndefined();
    expect(reset.title).toBe("Old");
    expect(journalUpdateForm(current, { title: undefined }).title).toBe("Old");

    const { transport, calls } = recordingTransport(() => ({ status: "success", url: "u", deviationid: "J-1" }));
    await new DaClient(transport).journalUpdate("J-1", current, { tags: [] });
    expect(calls[0]?.req).toMatchObject({ method: "POST", path: "/deviation/journal/update/J-1", form: { title: "Old", tags: [] } });
  });

  it("literatureUpdate merges current and changes and sends the mature fields only when mature", async () => {
    const { transport, calls } = recordingTransport(() => ({ status: "success", url: "u", deviationid: "L-1" }));
    await new DaClient(transport).literatureUpdate(
      "L-1",
      { title: "T", tags: ["x"], galleryids: ["G-1"], is_mature: false, allow_comments: true, license: { creative_commons: false } },
      { is_mature: true, mature_level: "moderate", mature_classification: ["gore"] },
    );
    expect(calls[0]?.req).toEqual({
      operation: "deviation.literature.update",
      method: "POST",
      path: "/deviation/literature/update/L-1",
      form: {
        title: "T",
        tags: ["x"],
        galleryids: ["G-1"],
        is_mature: true,
        allow_comments: true,
        "license_options[creative_commons]": false,
        mature_level: "moderate",
        mature_classification: ["gore"],
      },
    });
  });

  it("call() fills path params and sends the rest as query or form, validating with the operation's schema", async () => {
    const { transport, calls } = recordingTransport((req) =>
      req.operation === "data.countries" ? { results: [{ countryid: 1, name: "X" }] } : { success: true },
    );
    const client = new DaClient(transport);
    await client.call("notes.folders.rename", { folderid: "F 1", title: "New" });
    const countries = await client.call("data.countries");
    expect(calls[0]?.req).toEqual({ operation: "notes.folders.rename", method: "POST", path: "/notes/folders/rename/F%201", form: { title: "New" } });
    expect(countries.results[0]?.name).toBe("X");
    await expect(client.call("gallery.folder", {})).rejects.toThrow(/needs a value for \{folderid\}/);
  });

  it("refuses file uploads to stash until the transport sends multipart", () => {
    const { transport } = recordingTransport();
    // @ts-expect-error files are not supported by the type either
    expect(() => new DaClient(transport).stashSubmit({ files: [Buffer.from("x")] })).toThrow(/multipart/);
  });

  it("names the scopes of every write method from the catalogue", () => {
    expect(DaClient.scopesFor("fave")).toEqual(["browse", "collection"]);
    expect(DaClient.scopesFor("journalUpdate")).toEqual(["user.manage"]);
    for (const id of Object.values(WRITE_OPERATIONS)) expect(operation(id).write, id).toBe(true);
    // every live write operation has a typed method, except multipart avatar upload and the POST twin of remove
    const live = CATALOGUE.filter((op) => op.write && op.removed === false).map((op) => op.id);
    const untyped = live.filter((id) => !(Object.values(WRITE_OPERATIONS) as string[]).includes(id)).sort();
    expect(untyped).toEqual(["gallery.folders.remove.post", "user.profile.avatar.update"]);
    const client = new DaClient(recordingTransport().transport) as unknown as Record<string, unknown>;
    for (const method of Object.keys(WRITE_OPERATIONS)) expect(typeof client[method], method).toBe("function");
  });

  it("has a response schema for every catalogue operation", () => {
    // The schema lives in the entry (src/api/catalogue/*.ts); an entry written without one would read as undefined here.
    const missing = CATALOGUE.filter((op) => typeof responseSchema(op.id)?.safeParse !== "function").map((op) => op.id);
    expect(missing).toEqual([]);
  });
});
