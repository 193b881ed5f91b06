// /collections/*: favourites folders, faving and unfaving, folder management.
import type { SimCollectionFolder } from "../dataset.ts";
import { isGone } from "../dataset.ts";
import { ERR, apiError, json, type Reply } from "../http.ts";
import { offsetPage } from "../paging.ts";
import { deviationJson } from "../render.ts";
import { actingUser, cached, showsMature, touch, type ApiContext, type ApiRoute } from "../world.ts";
import { getDeviation, idsToDeviations, isUser, requireParams, success, targetUser } from "./common.ts";
import type { SimDeviation } from "../dataset.ts";

const READ = ["browse"];
const WRITE = ["browse", "collection"];

function folderNotFound(): Reply {
  return apiError(400, "invalid_request", "Folder not found.", { error_code: 0 });
}

function findFolder(ctx: ApiContext, folderid: string | undefined, ownerId?: string): SimCollectionFolder | undefined {
  if (!folderid) return undefined;
  const f = ctx.world.data.collectionFolders.find((x) => x.folderid === folderid.toUpperCase());
  if (!f || (ownerId !== undefined && f.ownerId !== ownerId)) return undefined;
  return f;
}

/**
 * Collections show deleted favourites as `is_deleted` stubs (docs/service-behaviour.md#deleted-stubs); mature
 * ones are hidden unless asked for, and works of gone users always (#user-error-codes).
 */
function keepInCollection(ctx: ApiContext, d: SimDeviation): boolean {
  if (d.isDeleted) return true;
  if (d.isMature && !showsMature(ctx)) return false;
  return !isGone(ctx.world.data.users.get(d.authorId));
}

function folderJson(ctx: ApiContext, f: SimCollectionFolder): Record<string, unknown> {
  const out: Record<string, unknown> = { folderid: f.folderid, name: f.name };
  if (f.description) out.description = f.description;
  if (ctx.params.bool("calculate_size")) out.size = f.deviationIds.length;
  const first = idsToDeviations(ctx.world, f.deviationIds.slice(0, 1))[0];
  if (first && !first.isDeleted) out.thumb = deviationJson(ctx, first);
  if (ctx.params.bool("ext_preload")) {
    out.deviations = idsToDeviations(ctx.world, f.deviationIds.slice(0, 8))
      .filter((d) => keepInCollection(ctx, d))
      .slice(0, 5)
      .map((d) => deviationJson(ctx, d));
  }
  return out;
}

function favourite(ctx: ApiContext, add: boolean): Reply {
  const missing = requireParams(ctx, "deviationid");
  if (missing) return missing;
  const d = getDeviation(ctx.world, ctx.params.get("deviationid"));
  if (!d || d.isDeleted) return apiError(400, "invalid_request", "Deviation not found.", { error_code: 0 });
  const me = actingUser(ctx);
  const mine = ctx.world.data.collectionFolders.filter((f) => f.ownerId === me.userid);
  const wanted = ctx.params.array("folderid").map((s) => s.toUpperCase());
  const targets = wanted.length > 0 ? mine.filter((f) => wanted.includes(f.folderid)) : add ? mine.slice(0, 1) : mine;
  if (wanted.length > 0 && targets.length !== wanted.length) return folderNotFound();
  for (const f of targets) {
    if (add && !f.deviationIds.includes(d.deviationid)) f.deviationIds.unshift(d.deviationid);
    if (!add) f.deviationIds = f.deviationIds.filter((id) => id !== d.deviationid);
  }
  const stillFaved = mine.some((f) => f.deviationIds.includes(d.deviationid));
  const had = d.favedBy.some((x) => x.userid === me.userid);
  if (stillFaved && !had) {
    d.favedBy.push({ userid: me.userid, time: Math.floor(ctx.world.clock.nowMs() / 1000) });
    d.stats.favourites++;
  } else if (!stillFaved && had) {
    d.favedBy = d.favedBy.filter((x) => x.userid !== me.userid);
    d.stats.favourites = Math.max(0, d.stats.favourites - 1);
  }
  touch(ctx.world);
  return success({ favourites: d.stats.favourites });
}

export const collectionRoutes: ApiRoute[] = [
  {
    methods: ["GET"],
    template: "/collections/folders",
    scopes: READ,
    handler(ctx) {
      const user = targetUser(ctx);
      if (!isUser(user)) return user;
      let folders = ctx.world.data.collectionFolders.filter((f) => f.ownerId === user.userid);
      if (ctx.params.bool("filter_empty_folder")) folders = folders.filter((f) => f.deviationIds.length > 0);
      return offsetPage(ctx, folders, { maxLimit: 50, render: (f) => folderJson(ctx, f) });
    },
  },
  {
    methods: ["GET"],
    template: "/collections/all",
    scopes: READ,
    handler(ctx) {
      const user = targetUser(ctx);
      if (!isUser(user)) return user;
      const all = cached(ctx.world, `collections-all:${user.userid}`, () => {
        const seen = new Set<string>();
        const ids: string[] = [];
        for (const f of ctx.world.data.collectionFolders) {
          if (f.ownerId !== user.userid) continue;
          for (const id of f.deviationIds) {
            if (seen.has(id)) continue;
            seen.add(id);
            ids.push(id);
          }
        }
        return idsToDeviations(ctx.world, ids);
      });
      return offsetPage(ctx, all, { maxLimit: 24, keep: (d) => keepInCollection(ctx, d), render: (d) => deviationJson(ctx, d) });
    },
  },
  {
    methods: ["GET"],
    template: "/collections/{folderid}",
    scopes: READ,
    handler(ctx) {
      const user = targetUser(ctx);
      if (!isUser(user)) return user;
      const folder = findFolder(ctx, ctx.pathParams.folderid, user.userid);
      if (!folder) return folderNotFound();
      return offsetPage(ctx, idsToDeviations(ctx.world, folder.deviationIds), {
        maxLimit: 24,
        keep: (d) => keepInCollection(ctx, d),
        render: (d) => deviationJson(ctx, d),
        extra: { name: folder.name },
      });
    },
  },
  { methods: ["POST"], template: "/collections/fave", scopes: WRITE, userOnly: true, handler: (ctx) => favourite(ctx, true) },
  { methods: ["POST"], template: "/collections/unfave", scopes: WRITE, userOnly: true, handler: (ctx) => favourite(ctx, false) },
  {
    methods: ["POST"],
    template: "/collections/folders/create",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const missing = requireParams(ctx, "folder");
      if (missing) return missing;
      const f: SimCollectionFolder = {
        folderid: ctx.world.rng.uuid(),
        ownerId: actingUser(ctx).userid,
        name: ctx.params.get("folder") ?? "",
        description: ctx.params.get("description") ?? "",
        deviationIds: [],
      };
      ctx.world.data.collectionFolders.push(f);
      touch(ctx.world);
      return json(200, { folderid: f.folderid, name: f.name, description: f.description });
    },
  },
  {
    methods: ["GET"],
    template: "/collections/folders/remove/{folderid}",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const f = findFolder(ctx, ctx.pathParams.folderid, actingUser(ctx).userid);
      if (!f) return folderNotFound();
      const all = ctx.world.data.collectionFolders;
      all.splice(all.indexOf(f), 1);
      touch(ctx.world);
      return success();
    },
  },
  { methods: ["POST"], template: "/collections/folders/copy_deviations", scopes: WRITE, userOnly: true, handler: (ctx) => copyOrMove(ctx, false) },
  { methods: ["POST"], template: "/collections/folders/move_deviations", scopes: WRITE, userOnly: true, handler: (ctx) => copyOrMove(ctx, true) },
  {
    methods: ["POST"],
    template: "/collections/folders/remove_deviations",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const f = findFolder(ctx, ctx.params.get("folderid"), actingUser(ctx).userid);
      if (!f) return folderNotFound();
      const ids = new Set(ctx.params.array("deviationids").map((s) => s.toUpperCase()));
      if (ids.size === 0) return ERR.required("deviationids");
      f.deviationIds = f.deviationIds.filter((id) => !ids.has(id));
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/collections/folders/update",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const f = findFolder(ctx, ctx.params.get("folderid"), actingUser(ctx).userid);
      if (!f) return folderNotFound();
      const name = ctx.params.get("name");
      if (name) f.name = name;
      const description = ctx.params.get("description");
      if (description !== undefined) f.description = description;
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/collections/folders/update_deviation_order",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const f = findFolder(ctx, ctx.params.get("folderid"), actingUser(ctx).userid);
      if (!f) return folderNotFound();
      const id = ctx.params.get("deviationid")?.toUpperCase();
      const position = ctx.params.int("position");
      if (!id || !f.deviationIds.includes(id)) return ERR.validation({ deviationid: "deviationid is not in this folder" });
      if (typeof position !== "number" || position < 0) return ERR.required("position");
      f.deviationIds.splice(f.deviationIds.indexOf(id), 1);
      f.deviationIds.splice(Math.min(position, f.deviationIds.length), 0, id);
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/collections/folders/update_order",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const me = actingUser(ctx);
      const f = findFolder(ctx, ctx.params.get("folderid"), me.userid);
      if (!f) return folderNotFound();
      const position = ctx.params.int("position");
      if (typeof position !== "number" || position < 0) return ERR.required("position");
      const all = ctx.world.data.collectionFolders;
      all.splice(all.indexOf(f), 1);
      const mine = all.filter((x) => x.ownerId === me.userid);
      const anchor = mine[position];
      all.splice(anchor ? all.indexOf(anchor) : all.length, 0, f);
      touch(ctx.world);
      return success();
    },
  },
];

function copyOrMove(ctx: ApiContext, move: boolean): Reply {
  const me = actingUser(ctx);
  const target = findFolder(ctx, ctx.params.get("target_folderid"), me.userid);
  if (!target) return folderNotFound();
  const source = move ? findFolder(ctx, ctx.params.get("source_folderid"), me.userid) : undefined;
  if (move && !source) return folderNotFound();
  const ids = ctx.params.array("deviationids").map((s) => s.toUpperCase());
  if (ids.length === 0) return ERR.required("deviationids");
  for (const id of ids) if (!getDeviation(ctx.world, id)) return ERR.validation({ deviationids: `unknown deviation ${id}` });
  for (const id of ids) if (!target.deviationIds.includes(id)) target.deviationIds.unshift(id);
  if (source) source.deviationIds = source.deviationIds.filter((id) => !ids.includes(id));
  touch(ctx.world);
  return success();
}
