// /browse/* and /curated/*: public discovery listings over every deviation in the dataset. Several are
// gone from the current service (newest, popular, deviantsyouwatch, user/journals, morelikethis).
import type { SimDeviation } from "../dataset.ts";
import { simIso } from "../dataset.ts";
import { ERR, apiError, json, type Reply } from "../http.ts";
import { offsetPage } from "../paging.ts";
import { deviationJson, userJson } from "../render.ts";
import { actingUser, cached, visibleDeviation, type ApiContext, type ApiRoute } from "../world.ts";
import { getDeviation, isUser, requireParams, targetUser } from "./common.ts";

const READ = ["browse"];

function everything(ctx: ApiContext): SimDeviation[] {
  return cached(ctx.world, "browse-all", () =>
    [...ctx.world.data.deviations.values()].filter((d) => !d.isDeleted).sort((a, b) => b.publishedTime - a.publishedTime || b.numericId - a.numericId),
  );
}

/**
 * Browse endpoints silently cap `limit` at 24 (docs/service-behaviour.md#browse-limit-cap) while still
 * rejecting values above their documented max.
 */
function browsePage(ctx: ApiContext, items: readonly SimDeviation[], maxLimit: number, extra: Record<string, unknown> = {}): Reply {
  return offsetPage(ctx, items, {
    maxLimit,
    silentLimitCap: 24,
    keep: (d) => visibleDeviation(ctx, d),
    render: (d) => deviationJson(ctx, d),
    estimatedTotal: true,
    extra,
  });
}

function byTag(ctx: ApiContext, tag: string): SimDeviation[] {
  const t = tag.toLowerCase();
  return everything(ctx).filter((d) => d.tags.includes(t));
}

function topics(ctx: ApiContext): Array<{ name: string; canonical_name: string }> {
  const tags = new Set<string>();
  for (const d of everything(ctx)) for (const t of d.tags) tags.add(t);
  return [...tags].sort().map((t) => ({ name: t[0]!.toUpperCase() + t.slice(1), canonical_name: t }));
}

function moreLikeThisPreview(ctx: ApiContext): Reply {
  const seed = getDeviation(ctx.world, ctx.params.get("seed"));
  if (!seed || seed.isDeleted) return apiError(400, "invalid_request", "Invalid seed.", { error_code: 0 });
  const author = ctx.world.data.users.get(seed.authorId);
  const fromArtist = everything(ctx)
    .filter((d) => d.authorId === seed.authorId && d.deviationid !== seed.deviationid && visibleDeviation(ctx, d))
    .slice(0, 6);
  const fromDa = everything(ctx)
    .filter((d) => d.authorId !== seed.authorId && d.tags.some((t) => seed.tags.includes(t)) && visibleDeviation(ctx, d))
    .slice(0, 6);
  return json(200, {
    seed: seed.deviationid,
    author: author ? userJson(ctx.world, author) : null,
    more_from_artist: fromArtist.map((d) => deviationJson(ctx, d)),
    more_from_da: fromDa.map((d) => deviationJson(ctx, d)),
  });
}

export const browseRoutes: ApiRoute[] = [
  {
    methods: ["GET"],
    template: "/browse/dailydeviations",
    scopes: READ,
    handler(ctx) {
      const date = ctx.params.get("date") ?? simIso(ctx.world.clock.nowMs()).slice(0, 10);
      if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return ERR.validation({ date: "date must be YYYY-MM-DD" });
      const all = everything(ctx).filter((d) => visibleDeviation(ctx, d) && d.kind === "image");
      const start = (Number(date.replace(/-/g, "")) * 7) % Math.max(1, all.length);
      const picked = all.slice(start, start + 6);
      const giver = ctx.world.data.users.get(ctx.world.data.ownerId);
      return json(200, {
        has_more: false,
        results: picked.map((d) => ({
          ...deviationJson(ctx, d),
          daily_deviation: { body: "A lovely piece.", time: `${date}T00:00:00-0700`, giver: giver ? userJson(ctx.world, giver) : null },
        })),
      });
    },
  },
  {
    methods: ["GET"],
    template: "/browse/deviantsyouwatch",
    scopes: READ,
    userOnly: true,
    removed: true,
    handler(ctx) {
      const watched = new Set(actingUser(ctx).friends.map((f) => f.userid));
      return offsetPage(
        ctx,
        everything(ctx).filter((d) => watched.has(d.authorId)),
        { maxLimit: 50, keep: (d) => visibleDeviation(ctx, d), render: (d) => deviationJson(ctx, d) },
      );
    },
  },
  {
    methods: ["GET"],
    template: "/browse/posts/deviantsyouwatch",
    scopes: READ,
    userOnly: true,
    removed: true,
    handler(ctx) {
      const watched = new Set(actingUser(ctx).friends.map((f) => f.userid));
      const journals = everything(ctx).filter((d) => watched.has(d.authorId) && d.kind === "journal");
      return offsetPage(ctx, journals, { maxLimit: 50, keep: (d) => visibleDeviation(ctx, d), render: (d) => ({ journal: deviationJson(ctx, d) }) });
    },
  },
  {
    methods: ["GET"],
    template: "/browse/recommended",
    scopes: READ,
    userOnly: true,
    removed: true,
    handler: (ctx) =>
      browsePage(
        ctx,
        everything(ctx).filter((d) => d.authorId !== actingUser(ctx).userid),
        50,
      ),
  },
  { methods: ["GET"], template: "/browse/home", scopes: READ, handler: (ctx) => browsePage(ctx, everything(ctx), 50) },
  {
    methods: ["GET"],
    template: "/browse/hot",
    scopes: READ,
    handler: (ctx) =>
      browsePage(
        ctx,
        cached(ctx.world, "browse-hot", () =>
          everything(ctx)
            .slice()
            .sort((a, b) => b.stats.viewsToday - a.stats.viewsToday || b.numericId - a.numericId),
        ),
        120,
      ),
  },
  {
    methods: ["GET"],
    template: "/browse/undiscovered",
    scopes: READ,
    handler: (ctx) =>
      browsePage(
        ctx,
        everything(ctx).filter((d) => d.stats.favourites < 20),
        120,
      ),
  },
  { methods: ["GET"], template: "/browse/newest", scopes: READ, removed: true, handler: (ctx) => browsePage(ctx, everything(ctx), 120) },
  {
    methods: ["GET"],
    template: "/browse/popular",
    scopes: READ,
    removed: true,
    handler: (ctx) =>
      browsePage(
        ctx,
        cached(ctx.world, "browse-popular", () =>
          everything(ctx)
            .slice()
            .sort((a, b) => b.stats.favourites - a.stats.favourites || b.numericId - a.numericId),
        ),
        120,
      ),
  },
  {
    methods: ["GET"],
    template: "/browse/morelikethis",
    scopes: ["browse", "browse.mlt"],
    removed: true,
    handler(ctx) {
      const seed = getDeviation(ctx.world, ctx.params.get("seed"));
      if (!seed) return apiError(400, "invalid_request", "Invalid seed.", { error_code: 0 });
      return browsePage(
        ctx,
        everything(ctx).filter((d) => d.deviationid !== seed.deviationid && d.tags.some((t) => seed.tags.includes(t))),
        50,
      );
    },
  },
  { methods: ["GET"], template: "/browse/morelikethis/preview", scopes: ["browse", "browse.mlt"], handler: moreLikeThisPreview },
  {
    methods: ["GET"],
    template: "/browse/tags",
    scopes: READ,
    handler(ctx) {
      const missing = requireParams(ctx, "tag");
      if (missing) return missing;
      return offsetPage(ctx, byTag(ctx, ctx.params.get("tag") ?? ""), {
        maxLimit: 50,
        keep: (d) => visibleDeviation(ctx, d),
        render: (d) => deviationJson(ctx, d),
        estimatedTotal: true,
      });
    },
  },
  {
    methods: ["GET"],
    template: "/browse/tags/search",
    scopes: READ,
    handler(ctx) {
      const missing = requireParams(ctx, "tag_name");
      if (missing) return missing;
      const prefix = (ctx.params.get("tag_name") ?? "").toLowerCase();
      return json(200, {
        results: topics(ctx)
          .filter((t) => t.canonical_name.startsWith(prefix))
          .map((t) => ({ tag_name: t.canonical_name })),
      });
    },
  },
  {
    methods: ["GET"],
    template: "/browse/topic",
    scopes: READ,
    handler(ctx) {
      const missing = requireParams(ctx, "topic");
      if (missing) return missing;
      return offsetPage(ctx, byTag(ctx, ctx.params.get("topic") ?? ""), {
        maxLimit: 24,
        keep: (d) => visibleDeviation(ctx, d),
        render: (d) => deviationJson(ctx, d),
      });
    },
  },
  {
    methods: ["GET"],
    template: "/browse/topics",
    scopes: READ,
    handler(ctx) {
      const per = ctx.params.int("num_deviations_per_topic");
      if (per === "invalid" || (per !== undefined && (per < 1 || per > 24)))
        return ERR.validation({ num_deviations_per_topic: "num_deviations_per_topic is not within the allowed range" });
      return offsetPage(ctx, topics(ctx), {
        maxLimit: 10,
        render: (t) => ({
          ...t,
          deviations: byTag(ctx, t.canonical_name)
            .filter((d) => visibleDeviation(ctx, d))
            .slice(0, per ?? 6)
            .map((d) => deviationJson(ctx, d)),
        }),
      });
    },
  },
  {
    methods: ["GET"],
    template: "/browse/toptopics",
    scopes: READ,
    handler(ctx) {
      return json(200, {
        results: topics(ctx)
          .slice(0, 10)
          .map((t) => ({
            ...t,
            example_deviations: byTag(ctx, t.canonical_name)
              .filter((d) => visibleDeviation(ctx, d))
              .slice(0, 1)
              .map((d) => deviationJson(ctx, d)),
          })),
      });
    },
  },
  {
    methods: ["GET"],
    template: "/browse/user/journals",
    scopes: READ,
    removed: true,
    handler(ctx) {
      const user = targetUser(ctx);
      if (!isUser(user)) return user;
      const journals = everything(ctx).filter((d) => d.authorId === user.userid && d.kind === "journal");
      return offsetPage(ctx, journals, { maxLimit: 50, keep: (d) => visibleDeviation(ctx, d), render: (d) => deviationJson(ctx, d) });
    },
  },
  {
    methods: ["GET"],
    template: "/browse/categorytree",
    scopes: READ,
    handler(ctx) {
      const catpath = ctx.params.get("catpath") ?? "/";
      if (catpath !== "/") return json(200, { categories: [] });
      return json(200, {
        categories: [
          { catpath: "digitalart", title: "Digital Art", has_subcategory: true, parent_catpath: "/" },
          { catpath: "traditional", title: "Traditional Art", has_subcategory: true, parent_catpath: "/" },
          { catpath: "photography", title: "Photography", has_subcategory: true, parent_catpath: "/" },
          { catpath: "literature", title: "Literature", has_subcategory: true, parent_catpath: "/" },
        ],
      });
    },
  },
  {
    methods: ["GET"],
    template: "/curated",
    scopes: READ,
    handler(ctx) {
      return offsetPage(ctx, topics(ctx), {
        maxLimit: 10,
        render: (t) => ({
          ...t,
          deviations: byTag(ctx, t.canonical_name)
            .filter((d) => visibleDeviation(ctx, d))
            .slice(0, 4)
            .map((d) => deviationJson(ctx, d)),
        }),
      });
    },
  },
  {
    methods: ["GET"],
    template: "/curated/tags",
    scopes: READ,
    handler(ctx) {
      return json(200, {
        results: topics(ctx)
          .slice(0, 8)
          .map((t) => ({
            tag: t.canonical_name,
            deviations: byTag(ctx, t.canonical_name)
              .filter((d) => visibleDeviation(ctx, d))
              .slice(0, 3)
              .map((d) => deviationJson(ctx, d)),
          })),
      });
    },
  },
];
