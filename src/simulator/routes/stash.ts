// /stash/*: submit and publish still work; everything else was removed in v20240701 and answers
// "Api endpoint not found." in current mode (docs/service-behaviour.md#endpoint-removed; legacy mode
// serves the old shapes).
import { createHash } from "node:crypto";
import type { SimStashItem } from "../dataset.ts";
import { makeDeviation } from "../dataset.ts";
import { ERR, apiError, json, type Reply } from "../http.ts";
import { offsetPage } from "../paging.ts";
import { deviationUrl } from "../render.ts";
import { actingUser, touch, type ApiContext, type ApiRoute } from "../world.ts";
import { success } from "./common.ts";

function stashMetadata(item: SimStashItem): Record<string, unknown> {
  return {
    title: item.title,
    artist_comments: item.artistComments,
    creation_time: item.creationTime,
    stackid: Number(item.stackid),
    itemid: Number(item.itemid),
    tags: item.tags,
    files: item.files.map((f) => ({ src: `https://sta.sh/file/${item.itemid}/${encodeURIComponent(f.filename)}`, width: 0, height: 0, transparency: false })),
    submission: { file_size: `${Math.round((item.files[0]?.size ?? 0) / 1024)} KB`, submitted_with: { app: "dvault simulator", url: "" } },
    stats: { views: 0, views_today: 0, downloads: 0, downloads_today: 0 },
  };
}

function findItem(ctx: ApiContext, id: string | undefined): SimStashItem | undefined {
  return id ? ctx.world.data.stash.find((i) => i.itemid === id) : undefined;
}

function itemNotFound(): Reply {
  return apiError(400, "invalid_request", "Item not found.", { error_code: 0 });
}

function stackItems(ctx: ApiContext, stackid: string | undefined): SimStashItem[] {
  return ctx.world.data.stash.filter((i) => i.stackid === stackid && i.publishedDeviationId === null);
}

function newId(ctx: ApiContext): string {
  // 64-bit-looking ids below 2^53, like the service's samples.
  return String(4_502_318_000_000_000 + ctx.world.rng.int(0, 999_999_999));
}

export const stashRoutes: ApiRoute[] = [
  {
    methods: ["POST"],
    template: "/stash/submit",
    scopes: ["stash"],
    userOnly: true,
    handler(ctx) {
      const existing = findItem(ctx, ctx.params.get("itemid"));
      if (ctx.params.has("itemid") && !existing) return itemNotFound();
      if (ctx.files.length === 0 && !existing) return apiError(400, "invalid_request", "Please include content to submit.", { error_code: 0 });
      const stackName = ctx.params.get("stack") ?? "Untitled stack";
      const stackid = ctx.params.get("stackid") ?? existing?.stackid ?? ctx.world.data.stash.find((i) => i.stack === stackName)?.stackid ?? newId(ctx);
      const item: SimStashItem = existing ?? {
        itemid: newId(ctx),
        stackid,
        stack: stackName,
        title: "",
        artistComments: "",
        tags: [],
        files: [],
        creationTime: Math.floor(ctx.world.clock.nowMs() / 1000),
        publishedDeviationId: null,
      };
      item.title = ctx.params.get("title") ?? item.title ?? ctx.files[0]?.filename ?? "";
      if (item.title === "") item.title = ctx.files[0]?.filename ?? "Untitled";
      item.artistComments = ctx.params.get("artist_comments") ?? item.artistComments;
      const tags = ctx.params.array("tags");
      if (tags.length > 0) item.tags = tags;
      if (ctx.files.length > 0) {
        item.files = ctx.files.map((f) => ({
          filename: f.filename,
          contentType: f.contentType,
          size: f.data.length,
          sha256: createHash("sha256").update(f.data).digest("hex"),
        }));
      }
      if (!existing) ctx.world.data.stash.push(item);
      touch(ctx.world);
      return json(200, { status: "success", itemid: Number(item.itemid), stack: item.stack, stackid: Number(item.stackid) });
    },
  },
  {
    methods: ["POST"],
    template: "/stash/publish",
    scopes: ["stash", "publish"],
    userOnly: true,
    handler(ctx) {
      const item = findItem(ctx, ctx.params.get("itemid"));
      if (!item || item.publishedDeviationId) return itemNotFound();
      if (!ctx.params.bool("agree_tos") || !ctx.params.bool("agree_submission")) {
        return ERR.validation({ agree_tos: "You must agree to the terms of service and submission policy." });
      }
      const me = actingUser(ctx);
      const world = ctx.world;
      const d = makeDeviation(world.rng, world.data, world.clock.nowMs(), {
        authorId: me.userid,
        kind: "image",
        title: item.title,
        publishedTime: Math.floor(world.clock.nowMs() / 1000),
        isMature: ctx.params.bool("is_mature"),
      });
      d.tags = item.tags;
      d.description = item.artistComments;
      d.isDownloadable = ctx.params.bool("allow_free_download");
      if (d.image && item.files[0]) d.image.filesize = item.files[0].size;
      const wanted = ctx.params.array("galleryids").map((s) => s.toUpperCase());
      const mine = world.data.galleryFolders.filter((f) => f.ownerId === me.userid);
      const targets = wanted.length > 0 ? mine.filter((f) => wanted.includes(f.folderid)) : mine.slice(1, 2).length ? mine.slice(1, 2) : mine.slice(0, 1);
      for (const f of targets) f.deviationIds.unshift(d.deviationid);
      item.publishedDeviationId = d.deviationid;
      touch(world);
      return json(200, { status: "success", url: deviationUrl(world, d), deviationid: d.deviationid });
    },
  },
  {
    methods: ["GET"],
    template: "/stash/{stackid}",
    scopes: ["stash"],
    userOnly: true,
    removed: true,
    handler(ctx) {
      const items = stackItems(ctx, ctx.pathParams.stackid);
      if (items.length === 0) return apiError(400, "invalid_request", "Stack not found.", { error_code: 0 });
      return json(200, { title: items[0]!.stack, size: items.length, stackid: Number(ctx.pathParams.stackid), thumb: null });
    },
  },
  {
    methods: ["GET"],
    template: "/stash/{stackid}/contents",
    scopes: ["stash"],
    userOnly: true,
    removed: true,
    handler: (ctx) => offsetPage(ctx, stackItems(ctx, ctx.pathParams.stackid), { maxLimit: 50, render: stashMetadata }),
  },
  {
    methods: ["GET", "POST"],
    template: "/stash/delete",
    scopes: ["stash"],
    userOnly: true,
    removed: true,
    handler(ctx) {
      const item = findItem(ctx, ctx.params.get("itemid"));
      if (!item) return itemNotFound();
      ctx.world.data.stash = ctx.world.data.stash.filter((i) => i !== item);
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["GET"],
    template: "/stash/delta",
    scopes: ["stash"],
    userOnly: true,
    removed: true,
    handler(ctx) {
      const items = ctx.world.data.stash.filter((i) => i.publishedDeviationId === null);
      const reply = offsetPage(ctx, items, {
        maxLimit: 120,
        render: (i) => ({ itemid: Number(i.itemid), stackid: Number(i.stackid), metadata: stashMetadata(i), position: 0 }),
      });
      if (!("json" in reply) || reply.status !== 200) return reply;
      const body = reply.json as Record<string, unknown>;
      return json(200, {
        cursor: Buffer.from(`delta:${ctx.world.index.version}`).toString("base64url"),
        has_more: body.has_more,
        next_offset: body.next_offset,
        reset: false,
        entries: body.results,
      });
    },
  },
  {
    methods: ["GET"],
    template: "/stash/item/{itemid}",
    scopes: ["stash"],
    userOnly: true,
    removed: true,
    handler(ctx) {
      const item = findItem(ctx, ctx.pathParams.itemid);
      return item ? json(200, stashMetadata(item)) : itemNotFound();
    },
  },
  ...(["move", "position", "update"] as const).map(
    (op): ApiRoute => ({
      methods: ["POST"],
      template: `/stash/${op}/{stackid}`,
      scopes: ["stash"],
      userOnly: true,
      removed: true,
      handler(ctx) {
        const items = stackItems(ctx, ctx.pathParams.stackid);
        if (items.length === 0) return apiError(400, "invalid_request", "Stack not found.", { error_code: 0 });
        if (op === "update") {
          const title = ctx.params.get("title");
          if (title) for (const i of items) i.stack = title;
        }
        if (op === "move") {
          const target = ctx.params.get("targetid");
          if (target) for (const i of items) i.stackid = target;
        }
        touch(ctx.world);
        return success();
      },
    }),
  ),
  {
    methods: ["GET"],
    template: "/stash/space",
    scopes: ["stash"],
    userOnly: true,
    removed: true,
    handler(ctx) {
      const used = ctx.world.data.stash.reduce((n, i) => n + i.files.reduce((m, f) => m + f.size, 0), 0);
      const total = 10 * 1024 * 1024 * 1024;
      return json(200, { available_space: total - used, total_space: total });
    },
  },
  {
    methods: ["GET"],
    template: "/stash/publish/categorytree",
    scopes: ["stash", "publish"],
    userOnly: true,
    removed: true,
    handler: () => json(200, { categories: [{ catpath: "digitalart", title: "Digital Art", has_subcategory: true, parent_catpath: "/" }] }),
  },
  {
    methods: ["GET"],
    template: "/stash/publish/userdata",
    scopes: ["stash", "publish"],
    userOnly: true,
    removed: true,
    handler: () => json(200, { features: ["sell_prints", "premium_downloads"], agreements: ["agree_submission", "agree_tos"] }),
  },
];
