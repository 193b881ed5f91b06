// /user/*: profiles, profile posts (cursor), friends (watching), watchers, watch/unwatch, whoami/whois,
// statuses (removed from the current service except posting), tiers, profile updates.
import type { SimStatus, SimUser, SimWatch, WatchFlags } from "../dataset.ts";
import { findUser, isGone, simIso } from "../dataset.ts";
import { ERR, apiError, json, type Reply } from "../http.ts";
import { cursorPage, offsetPage } from "../paging.ts";
import { deviationJson, expandFlags, statusAsPostJson, statusJson, userJson } from "../render.ts";
import { actingUser, touch, visibleDeviation, type ApiContext, type ApiRoute } from "../world.ts";
import { galleryAll, isUser, requireParams, success, targetUser } from "./common.ts";

const READ = ["browse"];

function pathUser(ctx: ApiContext): SimUser | Reply {
  return targetUser(ctx, ctx.pathParams.username ?? "");
}

function watchJson(flags: WatchFlags): WatchFlags {
  return { ...flags };
}

function profileJson(ctx: ApiContext, u: SimUser): Record<string, unknown> {
  const world = ctx.world;
  const viewer = ctx.caller.kind === "user" ? ctx.caller.user : undefined;
  const own = galleryAll(world, u.userid).filter((d) => !d.isDeleted);
  const lastStatus = world.data.statuses.find((s) => s.authorId === u.userid && !s.isDeleted);
  const out: Record<string, unknown> = {
    user: userJson(world, u, expandFlags(ctx)),
    is_watching: viewer ? viewer.friends.some((f) => f.userid === u.userid) : false,
    profile_url: `https://www.deviantart.com/${u.username.toLowerCase()}`,
    user_is_artist: u.artistLevel !== null,
    artist_level: u.artistLevel,
    artist_specialty: u.artistSpecialty,
    real_name: u.realName,
    tagline: u.tagline,
    countryid: u.countryid,
    country: u.country,
    website: u.website,
    bio: u.bio,
    cover_photo: "",
    profile_pic: own[0] && visibleDeviation(ctx, own[0]) ? deviationJson(ctx, own[0]) : null,
    last_status: lastStatus ? statusJson(ctx, lastStatus) : null,
    stats: {
      user_deviations: own.length,
      user_favourites: world.data.collectionFolders.filter((f) => f.ownerId === u.userid).reduce((n, f) => n + f.deviationIds.length, 0),
      user_comments: world.data.comments.filter((c) => c.userId === u.userid).length,
      profile_pageviews: u.profilePageviews,
      profile_comments: world.index.commentsByTarget.get(`profile:${u.username.toLowerCase()}`)?.length ?? 0,
    },
  };
  if (ctx.params.bool("ext_collections")) {
    out.collections = world.data.collectionFolders.filter((f) => f.ownerId === u.userid).map((f) => ({ folderid: f.folderid, name: f.name }));
  }
  if (ctx.params.bool("ext_galleries")) {
    out.galleries = world.data.galleryFolders.filter((f) => f.ownerId === u.userid).map((f) => ({ folderid: f.folderid, parent: f.parent, name: f.name }));
  }
  return out;
}

function friendEntry(ctx: ApiContext, of: SimUser, w: SimWatch): Record<string, unknown> | undefined {
  const u = ctx.world.data.users.get(w.userid);
  if (!u || isGone(u)) return undefined;
  const viewer = ctx.caller.kind === "user" ? ctx.caller.user : undefined;
  return {
    user: userJson(ctx.world, u, expandFlags(ctx)),
    is_watching: viewer ? viewer.friends.some((f) => f.userid === u.userid) : false,
    watches_you: u.friends.some((f) => f.userid === of.userid),
    lastvisit: w.lastvisit,
    watch: watchJson(w.watch),
  };
}

type Post = { kind: "deviation"; at: number; id: string } | { kind: "status"; at: number; status: SimStatus };

export const userRoutes: ApiRoute[] = [
  { methods: ["GET"], template: "/user/damntoken", scopes: ["user"], userOnly: true, handler: (ctx) => json(200, { damntoken: ctx.world.rng.hex(32) }) },
  {
    methods: ["GET"],
    template: "/user/friends/{username}",
    scopes: READ,
    handler(ctx) {
      const u = pathUser(ctx);
      if (!isUser(u)) return u;
      return offsetPage(ctx, u.friends, {
        maxLimit: 50,
        keep: (w) => !isGone(ctx.world.data.users.get(w.userid)),
        render: (w) => friendEntry(ctx, u, w),
      });
    },
  },
  {
    methods: ["GET"],
    template: "/user/friends/search",
    scopes: READ,
    handler(ctx) {
      const missing = requireParams(ctx, "query");
      if (missing) return missing;
      const of = targetUser(ctx);
      if (!isUser(of)) return of;
      const q = (ctx.params.get("query") ?? "").toLowerCase();
      const results = of.friends
        .map((w) => ctx.world.data.users.get(w.userid))
        .filter((u): u is SimUser => u !== undefined && !isGone(u) && u.username.toLowerCase().startsWith(q))
        .map((u) => userJson(ctx.world, u));
      return json(200, { results });
    },
  },
  {
    methods: ["GET"],
    template: "/user/friends/unwatch/{username}",
    scopes: ["browse", "user.manage"],
    userOnly: true,
    handler(ctx) {
      const u = pathUser(ctx);
      if (!isUser(u)) return u;
      const me = actingUser(ctx);
      me.friends = me.friends.filter((f) => f.userid !== u.userid);
      u.watcherIds = u.watcherIds.filter((id) => id !== me.userid);
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/user/friends/watch/{username}",
    scopes: ["browse", "user.manage"],
    userOnly: true,
    handler(ctx) {
      const u = pathUser(ctx);
      if (!isUser(u)) return u;
      const me = actingUser(ctx);
      if (u.userid === me.userid) return apiError(400, "invalid_request", "Failed to add friend - You cannot watch yourself.", { error_code: 2 });
      const given = ctx.params.record("watch");
      const flag = (k: keyof WatchFlags, def: boolean) => (given[k] === undefined ? def : given[k] === "1" || given[k] === "true");
      const watch: WatchFlags = {
        friend: flag("friend", false),
        deviations: flag("deviations", true),
        journals: flag("journals", true),
        forum_threads: flag("forum_threads", false),
        critiques: flag("critiques", false),
        scraps: flag("scraps", false),
        activity: flag("activity", true),
        collections: flag("collections", true),
      };
      const existing = me.friends.find((f) => f.userid === u.userid);
      if (existing) existing.watch = watch;
      else me.friends.unshift({ userid: u.userid, watch, lastvisit: null });
      if (!u.watcherIds.includes(me.userid)) u.watcherIds.unshift(me.userid);
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["GET"],
    template: "/user/friends/watching/{username}",
    scopes: ["browse", "user"],
    userOnly: true,
    handler(ctx) {
      const u = pathUser(ctx);
      if (!isUser(u)) return u;
      return json(200, { watching: actingUser(ctx).friends.some((f) => f.userid === u.userid) });
    },
  },
  {
    methods: ["GET"],
    template: "/user/profile/{username}",
    scopes: READ,
    handler(ctx) {
      const u = pathUser(ctx);
      if (!isUser(u)) return u;
      return json(200, profileJson(ctx, u));
    },
  },
  {
    methods: ["POST"],
    template: "/user/profile/avatar/update",
    scopes: ["user.manage"],
    userOnly: true,
    handler(ctx) {
      if (ctx.files.length === 0) return ERR.required("avatar_file");
      return success();
    },
  },
  {
    methods: ["GET"],
    template: "/user/profile/posts",
    scopes: READ,
    handler(ctx) {
      const u = targetUser(ctx);
      if (!isUser(u)) return u;
      const journals: Post[] = galleryAll(ctx.world, u.userid)
        .filter((d) => d.kind === "journal")
        .map((d) => ({ kind: "deviation" as const, at: d.publishedTime * 1000 + (d.numericId % 1000), id: d.deviationid }));
      // Like the real one, this feed misses many status updates (docs/service-behaviour.md#profile-posts-incomplete):
      // only every other one shows.
      const statuses: Post[] = ctx.world.data.statuses
        .filter((s, i) => s.authorId === u.userid && i % 2 === 0)
        .map((s) => ({ kind: "status" as const, at: Date.parse(s.ts.replace("+0000", "Z")) + 500, status: s }));
      const posts = [...journals, ...statuses].sort((a, b) => b.at - a.at);
      return cursorPage(ctx, posts, {
        maxLimit: 50,
        position: (p) => p.at,
        keep: (p) => {
          if (p.kind === "status") return true;
          const d = ctx.world.data.deviations.get(p.id);
          return d !== undefined && visibleDeviation(ctx, d);
        },
        render: (p) => (p.kind === "status" ? statusAsPostJson(ctx, p.status) : deviationJson(ctx, ctx.world.data.deviations.get(p.id)!)),
        style: "profile_posts",
      });
    },
  },
  {
    methods: ["POST"],
    template: "/user/profile/update",
    scopes: ["user.manage"],
    userOnly: true,
    handler(ctx) {
      const me = actingUser(ctx);
      const p = ctx.params;
      if (p.has("real_name")) me.realName = p.get("real_name") ?? "";
      if (p.has("tagline")) me.tagline = p.get("tagline") ?? "";
      if (p.has("website")) me.website = p.get("website") ?? "";
      if (p.has("bio")) me.bio = p.get("bio") ?? "";
      if (p.has("artist_specialty")) me.artistSpecialty = p.get("artist_specialty") ?? null;
      if (p.has("artist_level")) me.artistLevel = p.get("artist_level") ?? null;
      if (p.has("user_is_artist") && !p.bool("user_is_artist")) me.artistLevel = null;
      const countryid = p.int("countryid");
      if (typeof countryid === "number") me.countryid = countryid;
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["GET"],
    template: "/user/statuses",
    scopes: READ,
    removed: true,
    handler(ctx) {
      const missing = requireParams(ctx, "username");
      if (missing) return missing;
      const u = targetUser(ctx);
      if (!isUser(u)) return u;
      return offsetPage(
        ctx,
        ctx.world.data.statuses.filter((s) => s.authorId === u.userid),
        { maxLimit: 50, render: (s) => statusJson(ctx, s) },
      );
    },
  },
  {
    methods: ["GET"],
    template: "/user/statuses/{statusid}",
    scopes: READ,
    removed: true,
    handler(ctx) {
      const s = ctx.world.data.statuses.find((x) => x.statusid === (ctx.pathParams.statusid ?? "").toUpperCase());
      if (!s) return apiError(400, "invalid_request", "Status not found.", { error_code: 0 });
      return json(200, statusJson(ctx, s));
    },
  },
  {
    methods: ["POST"],
    template: "/user/statuses/post",
    scopes: ["browse", "user.manage"],
    userOnly: true,
    handler(ctx) {
      const body = ctx.params.get("body") ?? "";
      const shared = ctx.params.get("id");
      if (body === "" && !shared) return ERR.required("body");
      const s: SimStatus = {
        statusid: ctx.world.rng.uuid(),
        authorId: actingUser(ctx).userid,
        body,
        ts: simIso(ctx.world.clock.nowMs()),
        isDeleted: false,
        sharedDeviationId: shared && ctx.world.data.deviations.has(shared.toUpperCase()) ? shared.toUpperCase() : null,
      };
      ctx.world.data.statuses.unshift(s);
      touch(ctx.world);
      return json(200, { statusid: s.statusid });
    },
  },
  {
    methods: ["GET"],
    template: "/user/tiers/{username}",
    scopes: ["user"],
    userOnly: true,
    handler(ctx) {
      const u = pathUser(ctx);
      if (!isUser(u)) return u;
      const tiers = galleryAll(ctx.world, u.userid).filter((d) => d.tier !== null && !d.isDeleted);
      return json(200, { results: tiers.map((d) => deviationJson(ctx, d)) });
    },
  },
  {
    methods: ["GET"],
    template: "/user/watchers/{username}",
    scopes: READ,
    handler(ctx) {
      const u = pathUser(ctx);
      if (!isUser(u)) return u;
      const viewer = ctx.caller.kind === "user" ? ctx.caller.user : undefined;
      return offsetPage(ctx, u.watcherIds, {
        maxLimit: 50,
        keep: (id) => !isGone(ctx.world.data.users.get(id)),
        render: (id) => {
          const w = ctx.world.data.users.get(id);
          const watch = w?.friends.find((f) => f.userid === u.userid);
          return {
            user: w ? userJson(ctx.world, w, expandFlags(ctx)) : null,
            is_watching: viewer ? viewer.friends.some((f) => f.userid === id) : false,
            lastvisit: watch?.lastvisit ?? null,
            watch: watch ? watchJson(watch.watch) : null,
          };
        },
      });
    },
  },
  {
    methods: ["GET"],
    template: "/user/whoami",
    scopes: ["user"],
    userOnly: true,
    handler: (ctx) => json(200, userJson(ctx.world, actingUser(ctx), expandFlags(ctx))),
  },
  {
    methods: ["POST"],
    template: "/user/whois",
    scopes: READ,
    userOnly: true,
    handler(ctx) {
      const names = ctx.params.array("usernames");
      if (names.length === 0) return ERR.required("usernames");
      const results = names
        .map((n) => findUser(ctx.world.data, n))
        .filter((u): u is SimUser => u !== undefined && !isGone(u))
        .map((u) => userJson(ctx.world, u, expandFlags(ctx)));
      return json(200, { results });
    },
  },
];
