// /deviation/*: single deviations, metadata, text content, original downloads, edits, journals and
// literature.
import { cdnPath, originalFilename, signCdnPath } from "../cdn.ts";
import { deviationSlug, makeDeviation, type DeviationKind, type SimDeviation } from "../dataset.ts";
import { ERR, apiError, json, type Reply } from "../http.ts";
import { offsetPage } from "../paging.ts";
import { isGone } from "../dataset.ts";
import { deviationJson, deviationUrl, metadataJson, userJson } from "../render.ts";
import { deletedLookupOf } from "../variance.ts";
import { actingUser, showsMature, touch, type ApiContext, type ApiRoute } from "../world.ts";
import { deviationNotFound, getDeviation, requireParams } from "./common.ts";

const READ = ["browse"];

function ownDeviation(ctx: ApiContext, id: string | undefined, kinds?: DeviationKind[]): SimDeviation | Reply {
  const d = getDeviation(ctx.world, id);
  if (!d || d.isDeleted) return deviationNotFound();
  if (d.authorId !== actingUser(ctx).userid) return apiError(400, "invalid_request", "Deviation not owned by this user.", { error_code: 1 });
  if (kinds && !kinds.includes(d.kind)) return apiError(400, "invalid_request", "Unsupported deviation type.", { error_code: 1 });
  return d;
}

/** Whose allowance a download counts against: the token's user, or the app for client tokens. */
export function quotaKey(ctx: ApiContext): string {
  return ctx.caller.user?.userid ?? `client:${ctx.caller.token.clientId}`;
}

/**
 * The over-quota answer of March 2026: an HTTP 500 without the API's JSON. Its body was never published
 * (docs/service-behaviour.md#quota-as-500, UNCERTAIN): a generic server error page stands in.
 */
export const BARE_500_HTML = `<html>
<head><title>500 Internal Server Error</title></head>
<body>
<center><h1>500 Internal Server Error</h1></center>
</body>
</html>`;

function bare500(): Reply {
  return { status: 500, text: BARE_500_HTML, contentType: "text/html" };
}

/** A deleted deviation asked for by id: one of the answers public clients allow (docs/service-behaviour.md#deleted-deviation-lookup). */
function deletedAnswer(ctx: ApiContext, d: SimDeviation): Reply {
  const lookup = deletedLookupOf(ctx.world.data, d);
  if (lookup.kind === "stub") return json(200, deviationJson(ctx, d));
  return apiError(400, "invalid_request", "Deviation not found.", lookup.errorCode === null ? {} : { error_code: lookup.errorCode });
}

function isDeviation(x: SimDeviation | Reply): x is SimDeviation {
  return "deviationid" in x;
}

function createText(ctx: ApiContext, kind: "journal" | "literature"): Reply {
  const missing = requireParams(ctx, "title", "body");
  if (missing) return missing;
  const me = actingUser(ctx);
  const world = ctx.world;
  const d = makeDeviation(world.rng, world.data, world.clock.nowMs(), {
    authorId: me.userid,
    kind,
    title: ctx.params.get("title") ?? "",
    publishedTime: Math.floor(world.clock.nowMs() / 1000),
    isMature: ctx.params.bool("is_mature"),
  });
  const body = ctx.params.get("body") ?? "";
  d.text = { html: body, excerpt: body.replace(/<[^>]+>/g, "").slice(0, 200), apiHtmlEmpty: false };
  d.tags = ctx.params.array("tags");
  d.description = "";
  const folder =
    world.data.galleryFolders.find((f) => f.ownerId === me.userid && f.parent === null && f.name !== "Featured") ??
    world.data.galleryFolders.find((f) => f.ownerId === me.userid);
  folder?.deviationIds.unshift(d.deviationid);
  touch(world);
  return json(200, { status: "success", deviationid: d.deviationid, url: deviationUrl(world, d) });
}

/** Journal update clears every field not sent (except the cover image); literature likewise. */
function updateText(ctx: ApiContext, kind: "journal" | "literature"): Reply {
  const d = ownDeviation(ctx, ctx.pathParams.deviationid, [kind]);
  if (!isDeviation(d)) return d;
  d.title = ctx.params.get("title") ?? "";
  d.slug = deviationSlug(d.title);
  const body = ctx.params.get("body") ?? "";
  d.text = { html: body, excerpt: body.replace(/<[^>]+>/g, "").slice(0, 200), apiHtmlEmpty: false };
  d.tags = ctx.params.array("tags");
  d.isMature = ctx.params.bool("is_mature");
  d.version++;
  touch(ctx.world);
  return json(200, { status: "success", deviationid: d.deviationid, url: deviationUrl(ctx.world, d) });
}

export const deviationRoutes: ApiRoute[] = [
  {
    methods: ["GET"],
    template: "/deviation/{deviationid}",
    scopes: READ,
    handler(ctx) {
      const d = getDeviation(ctx.world, ctx.pathParams.deviationid);
      if (!d) return deviationNotFound();
      if (d.isDeleted) return deletedAnswer(ctx, d);
      // A gone author's deviation still answers here: no public source says otherwise
      // (docs/service-behaviour.md#gone-author-deviation, UNCERTAIN).
      return json(200, deviationJson(ctx, d));
    },
  },
  {
    methods: ["GET"],
    template: "/deviation/content",
    scopes: READ,
    handler(ctx) {
      const missing = requireParams(ctx, "deviationid");
      if (missing) return missing;
      const d = getDeviation(ctx.world, ctx.params.get("deviationid"));
      if (!d || d.isDeleted) return deviationNotFound();
      if (!d.text) return apiError(400, "invalid_request", "Unsupported deviation type.", { error_code: 1 });
      // Since 2024 the service often answers with an empty html for journals and literature
      // (docs/service-behaviour.md#content-empty-html).
      return json(200, { html: d.text.apiHtmlEmpty ? "" : d.text.html, css: "", css_fonts: [] });
    },
  },
  {
    methods: ["GET"],
    template: "/deviation/download/{deviationid}",
    scopes: READ,
    handler(ctx) {
      const d = getDeviation(ctx.world, ctx.pathParams.deviationid);
      if (!d || d.isDeleted) return deviationNotFound();
      // Tier content for a non-subscriber (the simulated viewer never subscribes; authors have access;
      // docs/service-behaviour.md#tier-locked: the status code is UNCERTAIN).
      if (d.tier && ctx.caller.user?.userid !== d.authorId) {
        return apiError(403, "invalid_request", "Only subscribers may have access to this download.");
      }
      if (!d.isDownloadable || !d.image || (d.isMature && ctx.caller.kind === "client")) {
        return apiError(400, "invalid_request", "Deviation not downloadable.", { error_code: 2 });
      }
      // The weekly allowance: shares error_code 2 with "not downloadable" (docs/service-behaviour.md#quota-weekly).
      // Over it, nothing is counted; the answer is today's 400 or the bare 500 it first was (#quota-as-500).
      if (!ctx.world.quota.consume(quotaKey(ctx), ctx.world.clock.nowMs())) {
        if (ctx.world.quotaExhaustion === "500") return bare500();
        return apiError(400, "invalid_request", "Free download limit reached.", { error_code: 2 });
      }
      const author = ctx.world.data.users.get(d.authorId);
      const filename = originalFilename(d, author?.username ?? "unknown");
      return json(200, {
        src: signCdnPath(ctx.world, cdnPath(d, "original", filename)),
        filename,
        width: d.image.width,
        height: d.image.height,
        filesize: d.image.filesize,
      });
    },
  },
  {
    methods: ["GET"],
    template: "/deviation/embeddedcontent",
    scopes: READ,
    removed: true,
    handler(ctx) {
      const d = getDeviation(ctx.world, ctx.params.get("deviationid"));
      if (!d) return deviationNotFound();
      return offsetPage(ctx, [] as SimDeviation[], { maxLimit: 50, render: (x) => deviationJson(ctx, x), bidirectional: true });
    },
  },
  {
    methods: ["POST"],
    template: "/deviation/edit/{deviationid}",
    scopes: ["stash", "publish"],
    userOnly: true,
    handler(ctx) {
      const d = ownDeviation(ctx, ctx.pathParams.deviationid);
      if (!isDeviation(d)) return d;
      const title = ctx.params.get("title");
      if (title !== undefined && title !== "") {
        d.title = title;
        d.slug = deviationSlug(title);
      }
      if (ctx.params.has("is_mature")) d.isMature = ctx.params.bool("is_mature");
      if (ctx.params.has("allow_comments")) d.allowsComments = ctx.params.bool("allow_comments");
      if (ctx.params.has("allow_free_download")) d.isDownloadable = ctx.params.bool("allow_free_download") && d.image !== null;
      d.version++;
      touch(ctx.world);
      return json(200, { status: "success", url: deviationUrl(ctx.world, d), deviationid: d.deviationid });
    },
  },
  { methods: ["POST"], template: "/deviation/journal/create", scopes: ["user.manage"], userOnly: true, handler: (ctx) => createText(ctx, "journal") },
  {
    methods: ["POST"],
    template: "/deviation/journal/update/{deviationid}",
    scopes: ["user.manage"],
    userOnly: true,
    handler: (ctx) => updateText(ctx, "journal"),
  },
  { methods: ["POST"], template: "/deviation/literature/create", scopes: ["user.manage"], userOnly: true, handler: (ctx) => createText(ctx, "literature") },
  {
    methods: ["POST"],
    template: "/deviation/literature/update/{deviationid}",
    scopes: ["user.manage"],
    userOnly: true,
    handler: (ctx) => updateText(ctx, "literature"),
  },
  // DeviantArtFs uses this path for literature updates; both answer (docs/service-behaviour.md#literature-update-path).
  {
    methods: ["POST"],
    template: "/deviation/journal/literature/update/{deviationid}",
    scopes: ["user.manage"],
    userOnly: true,
    handler: (ctx) => updateText(ctx, "literature"),
  },
  {
    methods: ["GET"],
    template: "/deviation/metadata",
    scopes: READ,
    handler(ctx) {
      const ids = ctx.params.array("deviationids");
      if (ids.length === 0) return ERR.required("deviationids");
      const ext = {
        submission: ctx.params.bool("ext_submission"),
        camera: ctx.params.bool("ext_camera"),
        stats: ctx.params.bool("ext_stats"),
        collection: ctx.params.bool("ext_collection"),
        gallery: ctx.params.bool("ext_gallery"),
      };
      // docs/service-behaviour.md#metadata-batch
      const max = Object.values(ext).some(Boolean) ? 10 : 50;
      if (ids.length > max) return apiError(400, "invalid_request", "Too many deviations requested.", { error_code: 0 });
      const metadata = [];
      for (const id of ids) {
        const d = getDeviation(ctx.world, id);
        if (!d || d.isDeleted) continue;
        if (d.isMature && !showsMature(ctx)) continue;
        metadata.push(metadataJson(ctx, d, ext));
      }
      return json(200, { metadata });
    },
  },
  {
    methods: ["GET"],
    template: "/deviation/whofaved",
    scopes: READ,
    handler(ctx) {
      const missing = requireParams(ctx, "deviationid");
      if (missing) return missing;
      const d = getDeviation(ctx.world, ctx.params.get("deviationid"));
      if (!d || d.isDeleted) return deviationNotFound();
      const faves = d.favedBy.slice().sort((a, b) => b.time - a.time);
      return offsetPage(ctx, faves, {
        maxLimit: 50,
        keep: (f) => !isGone(ctx.world.data.users.get(f.userid)),
        render: (f) => {
          const u = ctx.world.data.users.get(f.userid);
          return { user: u ? userJson(ctx.world, u) : null, time: f.time };
        },
      });
    },
  },
];
