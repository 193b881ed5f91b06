// /feed/* (deprecated but still answering, docs/service-behaviour.md#feed-deprecated): the watch feed with
// buckets, notifications, profile feed and feed settings. Cursor style `{cursor, has_more, items}`.
import type { SimFeedItem } from "../dataset.ts";
import { isGone } from "../dataset.ts";
import { apiError, json } from "../http.ts";
import { cursorPage, offsetPage } from "../paging.ts";
import { deviationJson, messageJson, statusJson, userJson } from "../render.ts";
import { actingUser, visibleDeviation, type ApiContext, type ApiRoute } from "../world.ts";
import { idsToDeviations, success } from "./common.ts";

const SCOPES = ["feed"];

type FeedSettings = { statuses: boolean; deviations: boolean; journals: boolean; group_deviations: boolean; collections: boolean; misc: boolean };
const settingsByWorld = new WeakMap<object, FeedSettings>();

function settings(ctx: ApiContext): FeedSettings {
  let s = settingsByWorld.get(ctx.world);
  if (!s) {
    s = { statuses: true, deviations: true, journals: true, group_deviations: true, collections: true, misc: true };
    settingsByWorld.set(ctx.world, s);
  }
  return s;
}

function feedItemJson(ctx: ApiContext, item: SimFeedItem): Record<string, unknown> {
  const by = ctx.world.data.users.get(item.byUserId);
  const devs = idsToDeviations(ctx.world, item.deviationIds).filter((d) => visibleDeviation(ctx, d));
  const out: Record<string, unknown> = { ts: item.ts, type: item.type, by_user: by ? userJson(ctx.world, by) : null };
  if (item.type === "deviation_submitted" || item.type === "journal_submitted") {
    out.deviations = devs.slice(0, 3).map((d) => deviationJson(ctx, d));
    out.bucketid = item.bucketid;
    out.bucket_total = item.deviationIds.length;
  }
  if (item.type === "status") {
    const status = item.statusId ? ctx.world.data.statuses.find((s) => s.statusid === item.statusId) : undefined;
    out.status = status ? statusJson(ctx, status) : { statusid: item.bucketid, body: "New status", ts: item.ts, is_deleted: false };
  }
  return out;
}

export const feedRoutes: ApiRoute[] = [
  {
    methods: ["GET"],
    template: "/feed/home",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const s = settings(ctx);
      const items = ctx.world.data.feed
        .filter((f) => (f.type === "status" ? s.statuses : f.type === "journal_submitted" ? s.journals : s.deviations))
        .filter((f) => !isGone(ctx.world.data.users.get(f.byUserId)))
        .slice()
        .sort((a, b) => b.seq - a.seq);
      return cursorPage(ctx, items, { maxLimit: 50, position: (f) => f.seq, render: (f) => feedItemJson(ctx, f), style: "feed" });
    },
  },
  {
    methods: ["GET"],
    template: "/feed/home/{bucketid}",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const item = ctx.world.data.feed.find((f) => f.bucketid === ctx.pathParams.bucketid);
      if (!item) return apiError(400, "invalid_request", "Bucket not found.", { error_code: 0 });
      return offsetPage(ctx, idsToDeviations(ctx.world, item.deviationIds), {
        maxLimit: 50,
        // docs/service-behaviour.md#feed-bucket-page-key: clients disagree; variance draws one per instance.
        itemsKey: ctx.world.data.variance?.bucketKey ?? "items",
        keep: (d) => visibleDeviation(ctx, d),
        render: (d) => deviationJson(ctx, d),
      });
    },
  },
  {
    methods: ["GET"],
    template: "/feed/notifications",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const messages = ctx.world.data.messages
        .filter((m) => m.box === "feedback")
        .slice()
        .sort((a, b) => b.seq - a.seq);
      return cursorPage(ctx, messages, { maxLimit: 50, position: (m) => m.seq, render: (m) => ({ ...messageJson(ctx, m), ts: m.ts }), style: "feed" });
    },
  },
  {
    methods: ["GET"],
    template: "/feed/profile",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const me = actingUser(ctx);
      const statuses = ctx.world.data.statuses.filter((s) => s.authorId === me.userid);
      const posts = statuses.map((s, i) => ({ seq: statuses.length - i, s }));
      return cursorPage(ctx, posts, {
        maxLimit: 50,
        position: (p) => p.seq,
        render: (p) => ({ ts: p.s.ts, type: "status", by_user: userJson(ctx.world, me), status: statusJson(ctx, p.s) }),
        style: "feed",
      });
    },
  },
  { methods: ["GET"], template: "/feed/settings", scopes: SCOPES, userOnly: true, handler: (ctx) => json(200, { include: { ...settings(ctx) } }) },
  {
    methods: ["POST"],
    template: "/feed/settings/update",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const s = settings(ctx);
      const given = ctx.params.record("include");
      for (const key of Object.keys(s) as Array<keyof FeedSettings>) {
        const v = given[key];
        if (v !== undefined) s[key] = v === "1" || v === "true";
      }
      return success();
    },
  },
];
