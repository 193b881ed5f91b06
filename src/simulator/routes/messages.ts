// /messages/*: the unified feed (cursor), feedback and mentions (offset, stacked by default), stack
// contents, and delete.
import type { SimMessage } from "../dataset.ts";
import { ERR, apiError, type Reply } from "../http.ts";
import { cursorPage, offsetPage } from "../paging.ts";
import { messageJson } from "../render.ts";
import { touch, type ApiContext, type ApiRoute } from "../world.ts";
import { success } from "./common.ts";

const SCOPES = ["message"];

type Entry = { message: SimMessage; count: number };

/** Newest first; stacked views keep the newest message of each stack with the stack's size. */
function entries(ctx: ApiContext, filter: (m: SimMessage) => boolean, stacked: boolean): Entry[] {
  const list = ctx.world.data.messages.filter(filter).sort((a, b) => b.seq - a.seq);
  if (!stacked) return list.map((message) => ({ message, count: 1 }));
  const counts = new Map<string, number>();
  for (const m of list) counts.set(m.stackid, (counts.get(m.stackid) ?? 0) + 1);
  const seen = new Set<string>();
  const out: Entry[] = [];
  for (const m of list) {
    if (seen.has(m.stackid)) continue;
    seen.add(m.stackid);
    out.push({ message: m, count: counts.get(m.stackid) ?? 1 });
  }
  return out;
}

function stackPage(ctx: ApiContext, box: SimMessage["box"]): Reply {
  const stackid = ctx.pathParams.stackid ?? "";
  const list = entries(ctx, (m) => m.box === box && m.stackid === stackid, false);
  if (list.length === 0) return apiError(400, "invalid_request", "Stack not found.", { error_code: 0 });
  return offsetPage(ctx, list, { maxLimit: 50, render: (e) => messageJson(ctx, e.message) });
}

export const messageRoutes: ApiRoute[] = [
  {
    methods: ["GET"],
    template: "/messages/feed",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const stacked = ctx.params.bool("stack", true);
      return cursorPage(
        ctx,
        entries(ctx, () => true, stacked),
        {
          maxLimit: 50,
          defaultLimit: 25,
          position: (e) => e.message.seq,
          render: (e) => messageJson(ctx, e.message, stacked ? e.count : undefined),
          style: "messages",
        },
      );
    },
  },
  {
    methods: ["GET"],
    template: "/messages/feedback",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const type = ctx.params.get("type");
      if (!type) return ERR.required("type");
      if (type !== "comments" && type !== "replies" && type !== "activity") return ERR.validation({ type: "type is not one of comments, replies, activity" });
      const stacked = ctx.params.bool("stack", true);
      // 5 in current clients, 50 in 2020 ones (docs/service-behaviour.md#page-size-maxima).
      const maxLimit = ctx.world.mode === "current" ? 5 : 50;
      return offsetPage(
        ctx,
        entries(ctx, (m) => m.box === "feedback" && m.feedbackType === type, stacked),
        {
          maxLimit,
          defaultLimit: Math.min(5, maxLimit),
          render: (e) => messageJson(ctx, e.message, stacked ? e.count : undefined),
        },
      );
    },
  },
  { methods: ["GET"], template: "/messages/feedback/{stackid}", scopes: SCOPES, userOnly: true, handler: (ctx) => stackPage(ctx, "feedback") },
  {
    methods: ["GET"],
    template: "/messages/mentions",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const stacked = ctx.params.bool("stack", true);
      return offsetPage(
        ctx,
        entries(ctx, (m) => m.box === "mentions", stacked),
        {
          maxLimit: 50,
          render: (e) => messageJson(ctx, e.message, stacked ? e.count : undefined),
        },
      );
    },
  },
  { methods: ["GET"], template: "/messages/mentions/{stackid}", scopes: SCOPES, userOnly: true, handler: (ctx) => stackPage(ctx, "mentions") },
  {
    methods: ["POST"],
    template: "/messages/delete",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const messageid = ctx.params.get("messageid");
      const stackid = ctx.params.get("stackid");
      if (!messageid && !stackid) return ERR.validation({ messageid: "messageid or stackid is required" });
      const before = ctx.world.data.messages.length;
      ctx.world.data.messages = ctx.world.data.messages.filter((m) => !(messageid ? m.messageid === messageid : m.stackid === stackid));
      if (ctx.world.data.messages.length === before) return apiError(400, "invalid_request", "Message not found.", { error_code: 0 });
      touch(ctx.world);
      return success();
    },
  },
];
