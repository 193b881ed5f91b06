// /comments/*: threads on deviations, profiles and statuses (offset paging with `thread`, `total`,
// `has_less`), siblings, and posting.
import type { CommentTarget, SimComment } from "../dataset.ts";
import { findUser, simIso } from "../dataset.ts";
import { ERR, apiError, json, type Reply } from "../http.ts";
import { offsetPage, offsetWindow, isReply } from "../paging.ts";
import { commentJson, deviationJson, statusJson, userJson } from "../render.ts";
import { actingUser, commentKey, touch, type ApiContext, type ApiRoute } from "../world.ts";
import { deviationNotFound, getDeviation, requireParams, userUnavailable } from "./common.ts";

const READ = ["browse"];
const POST = ["browse", "comment.post"];

function commentsOf(ctx: ApiContext, target: CommentTarget): SimComment[] {
  return ctx.world.index.commentsByTarget.get(commentKey(target.kind, target.id)) ?? [];
}

type Resolved = { target: CommentTarget; error?: undefined } | { target?: undefined; error: Reply };

function resolveTarget(ctx: ApiContext, kind: CommentTarget["kind"], id: string | undefined): Resolved {
  if (!id) return { error: apiError(400, "invalid_request", "Request field validation failed.", { error_details: { id: "id is required" } }) };
  if (kind === "deviation") {
    const d = getDeviation(ctx.world, id);
    if (!d || d.isDeleted) return { error: deviationNotFound() };
    return { target: { kind, id: d.deviationid } };
  }
  if (kind === "profile") {
    const u = findUser(ctx.world.data, id);
    if (!u) return { error: ERR.userNotFound() };
    const refused = userUnavailable(u);
    if (refused) return { error: refused };
    return { target: { kind, id: u.username.toLowerCase() } };
  }
  const s = ctx.world.data.statuses.find((x) => x.statusid === id.toUpperCase());
  if (!s) return { error: apiError(400, "invalid_request", "Status not found.", { error_code: 0 }) };
  return { target: { kind, id: s.statusid } };
}

/** Top-level comments (or the replies of `commentid`), each followed by its replies down to maxdepth. */
function threadList(all: SimComment[], parent: string | null, maxdepth: number): SimComment[] {
  const children = new Map<string | null, SimComment[]>();
  for (const c of all) {
    const list = children.get(c.parentid) ?? [];
    list.push(c);
    children.set(c.parentid, list);
  }
  const out: SimComment[] = [];
  const walk = (p: string | null, depth: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      if (depth < maxdepth) walk(c.commentid, depth + 1);
    }
  };
  walk(parent, 0);
  return out;
}

function listComments(ctx: ApiContext, kind: CommentTarget["kind"], id: string | undefined): Reply {
  const resolved = resolveTarget(ctx, kind, id);
  if (resolved.error) return resolved.error;
  const t = resolved.target;
  const all = commentsOf(ctx, t);
  const maxdepth = ctx.params.int("maxdepth");
  if (maxdepth === "invalid" || (maxdepth !== undefined && (maxdepth < 0 || maxdepth > 5))) {
    return apiError(400, "invalid_request", "Request field validation failed.", { error_details: { maxdepth: "maxdepth is not within the allowed range" } });
  }
  const parent = ctx.params.get("commentid") ?? null;
  if (parent !== null && !all.some((c) => c.commentid === parent)) return apiError(400, "invalid_request", "Comment not found.", { error_code: 0 });
  const list = threadList(all, parent, maxdepth ?? 0);
  return offsetPage(ctx, list, {
    maxLimit: 50,
    itemsKey: "thread",
    bidirectional: true,
    render: (c) => commentJson(ctx.world, c),
    extra: { total: all.length },
  });
}

function postComment(ctx: ApiContext, kind: CommentTarget["kind"], id: string | undefined): Reply {
  const missing = requireParams(ctx, "body");
  if (missing) return missing;
  const resolved = resolveTarget(ctx, kind, id);
  if (resolved.error) return resolved.error;
  const t = resolved.target;
  if (kind === "deviation" && getDeviation(ctx.world, t.id)?.allowsComments === false) {
    return apiError(400, "invalid_request", "Comments are disabled for this deviation.", { error_code: 1 });
  }
  const replyTo = ctx.params.get("commentid") ?? null;
  const existing = commentsOf(ctx, t);
  if (replyTo !== null && !existing.some((c) => c.commentid === replyTo)) return apiError(400, "invalid_request", "Comment not found.", { error_code: 0 });
  const c: SimComment = {
    commentid: String(4_800_000_000 + ctx.world.data.comments.length * 3),
    parentid: replyTo,
    target: t,
    posted: simIso(ctx.world.clock.nowMs()),
    userId: actingUser(ctx).userid,
    body: ctx.params.get("body") ?? "",
    hidden: null,
    likes: 0,
    isFeatured: false,
  };
  ctx.world.data.comments.push(c);
  const key = commentKey(t.kind, t.id);
  ctx.world.index.commentsByTarget.set(key, [...existing, c]);
  touch(ctx.world);
  return json(200, commentJson(ctx.world, c));
}

export const commentRoutes: ApiRoute[] = [
  // docs/service-behaviour.md#comments-removed-2026: gone since 2026-08-31 (profile "2026"); profile comments stay.
  {
    methods: ["GET"],
    template: "/comments/deviation/{deviationid}",
    scopes: READ,
    removedIn2026: true,
    handler: (ctx) => listComments(ctx, "deviation", ctx.pathParams.deviationid),
  },
  { methods: ["GET"], template: "/comments/profile/{username}", scopes: READ, handler: (ctx) => listComments(ctx, "profile", ctx.pathParams.username) },
  { methods: ["GET"], template: "/comments/status/{statusid}", scopes: READ, handler: (ctx) => listComments(ctx, "status", ctx.pathParams.statusid) },
  {
    methods: ["GET"],
    template: "/comments/{commentid}/siblings",
    scopes: READ,
    removedIn2026: true,
    handler(ctx) {
      const c = ctx.world.data.comments.find((x) => x.commentid === ctx.pathParams.commentid);
      if (!c) return apiError(400, "invalid_request", "Comment not found.", { error_code: 0 });
      const all = commentsOf(ctx, c.target);
      const siblings = all.filter((x) => x.parentid === c.parentid);
      const win = offsetWindow(ctx, 50);
      if (isReply(win)) return win;
      const parent = c.parentid ? all.find((x) => x.commentid === c.parentid) : undefined;
      const context: Record<string, unknown> = { parent: parent ? commentJson(ctx.world, parent) : null };
      if (ctx.params.bool("ext_item")) {
        if (c.target.kind === "deviation") {
          const d = getDeviation(ctx.world, c.target.id);
          context.item_deviation = d ? deviationJson(ctx, d) : null;
        } else if (c.target.kind === "profile") {
          const u = findUser(ctx.world.data, c.target.id);
          context.item_profile = u ? userJson(ctx.world, u) : null;
        } else {
          const s = ctx.world.data.statuses.find((x) => x.statusid === c.target.id);
          context.item_status = s ? statusJson(ctx, s) : null;
        }
      }
      return offsetPage(ctx, siblings, { maxLimit: 50, itemsKey: "thread", bidirectional: true, render: (x) => commentJson(ctx.world, x), extra: { context } });
    },
  },
  {
    methods: ["POST"],
    template: "/comments/post/deviation/{deviationid}",
    scopes: POST,
    userOnly: true,
    handler: (ctx) => postComment(ctx, "deviation", ctx.pathParams.deviationid),
  },
  {
    methods: ["POST"],
    template: "/comments/post/profile/{username}",
    scopes: POST,
    userOnly: true,
    handler: (ctx) => postComment(ctx, "profile", ctx.pathParams.username),
  },
  {
    methods: ["POST"],
    template: "/comments/post/status/{statusid}",
    scopes: POST,
    userOnly: true,
    handler: (ctx) => postComment(ctx, "status", ctx.pathParams.statusid),
  },
];
