// /gallery/*: folder lists, folder contents, the "all" view and folder management.
import type { SimGalleryFolder } from "../dataset.ts";
import { ERR, apiError, json, type Reply } from "../http.ts";
import { offsetPage } from "../paging.ts";
import { deviationJson } from "../render.ts";
import { touch, visibleDeviation, actingUser, type ApiContext, type ApiRoute } from "../world.ts";
import { galleryAll, getDeviation, idsToDeviations, isUser, requireParams, success, targetUser } from "./common.ts";

const READ = ["browse"];
const WRITE = ["browse", "gallery"];

function folderNotFound(): Reply {
  return apiError(400, "invalid_request", "Folder not found.", { error_code: 0 });
}

function findFolder(ctx: ApiContext, folderid: string | undefined, ownerId?: string): SimGalleryFolder | undefined {
  if (!folderid) return undefined;
  const f = ctx.world.data.galleryFolders.find((x) => x.folderid === folderid.toUpperCase());
  if (!f || (ownerId !== undefined && f.ownerId !== ownerId)) return undefined;
  return f;
}

function visibleCount(ctx: ApiContext, f: SimGalleryFolder): number {
  let n = 0;
  for (const id of f.deviationIds) {
    const d = ctx.world.data.deviations.get(id);
    if (d && !d.isDeleted) n++;
  }
  return n;
}

function folderJson(ctx: ApiContext, f: SimGalleryFolder, all: readonly SimGalleryFolder[]): Record<string, unknown> {
  const calculateSize = ctx.params.bool("calculate_size");
  const preload = ctx.params.bool("ext_preload");
  const children = all.filter((c) => c.parent === f.folderid);
  const out: Record<string, unknown> = { folderid: f.folderid, parent: f.parent, name: f.name };
  if (f.description) out.description = f.description;
  if (calculateSize) out.size = visibleCount(ctx, f);
  if (preload)
    out.deviations = idsToDeviations(ctx.world, f.deviationIds.slice(0, 8))
      .filter((d) => visibleDeviation(ctx, d))
      .slice(0, 5)
      .map((d) => deviationJson(ctx, d));
  out.has_subfolders = children.length > 0;
  out.subfolders = children.map((c) => ({ folderid: c.folderid, parent: c.parent, name: c.name, ...(calculateSize ? { size: visibleCount(ctx, c) } : {}) }));
  return out;
}

export const galleryRoutes: ApiRoute[] = [
  {
    methods: ["GET"],
    template: "/gallery/folders",
    scopes: READ,
    handler(ctx) {
      const user = targetUser(ctx);
      if (!isUser(user)) return user;
      const all = ctx.world.data.galleryFolders.filter((f) => f.ownerId === user.userid);
      const filterEmpty = ctx.params.bool("filter_empty_folder");
      const folders = filterEmpty ? all.filter((f) => visibleCount(ctx, f) > 0) : all;
      return offsetPage(ctx, folders, { maxLimit: 50, render: (f) => folderJson(ctx, f, all) });
    },
  },
  {
    methods: ["GET"],
    template: "/gallery/all",
    scopes: READ,
    handler(ctx) {
      const user = targetUser(ctx);
      if (!isUser(user)) return user;
      return offsetPage(ctx, galleryAll(ctx.world, user.userid), {
        maxLimit: 24,
        keep: (d) => visibleDeviation(ctx, d),
        render: (d) => deviationJson(ctx, d),
      });
    },
  },
  {
    methods: ["GET"],
    template: "/gallery/{folderid}",
    scopes: READ,
    handler(ctx) {
      const user = targetUser(ctx);
      if (!isUser(user)) return user;
      const folder = findFolder(ctx, ctx.pathParams.folderid, user.userid);
      if (!folder) return folderNotFound();
      let items = idsToDeviations(ctx.world, folder.deviationIds);
      if (ctx.params.get("mode") === "popular") items = items.slice().sort((a, b) => b.stats.favourites - a.stats.favourites);
      return offsetPage(ctx, items, {
        maxLimit: 24,
        keep: (d) => visibleDeviation(ctx, d),
        render: (d) => deviationJson(ctx, d),
        extra: { name: folder.name },
      });
    },
  },
  {
    methods: ["POST"],
    template: "/gallery/folders/create",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const missing = requireParams(ctx, "folder");
      if (missing) return missing;
      const me = actingUser(ctx);
      const parentId = ctx.params.get("parent_folderid") ?? ctx.params.get("parent");
      const parent = parentId ? findFolder(ctx, parentId, me.userid) : undefined;
      if (parentId && !parent) return folderNotFound();
      const folder: SimGalleryFolder = {
        folderid: ctx.world.rng.uuid(),
        ownerId: me.userid,
        parent: parent?.folderid ?? null,
        name: ctx.params.get("folder") ?? "",
        description: ctx.params.get("description") ?? "",
        deviationIds: [],
      };
      ctx.world.data.galleryFolders.push(folder);
      touch(ctx.world);
      return json(200, { folderid: folder.folderid, parent: folder.parent, name: folder.name, description: folder.description });
    },
  },
  {
    methods: ["GET", "POST"],
    template: "/gallery/folders/remove/{folderid}",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const me = actingUser(ctx);
      const folder = findFolder(ctx, ctx.pathParams.folderid, me.userid);
      if (!folder) return folderNotFound();
      const folders = ctx.world.data.galleryFolders;
      folders.splice(folders.indexOf(folder), 1);
      for (const f of folders) if (f.parent === folder.folderid) f.parent = folder.parent;
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/gallery/folders/copy_deviations",
    scopes: WRITE,
    userOnly: true,
    handler: (ctx) => copyOrMove(ctx, false),
  },
  {
    methods: ["POST"],
    template: "/gallery/folders/move_deviations",
    scopes: WRITE,
    userOnly: true,
    handler: (ctx) => copyOrMove(ctx, true),
  },
  {
    methods: ["POST"],
    template: "/gallery/folders/remove_deviations",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const me = actingUser(ctx);
      const folder = findFolder(ctx, ctx.params.get("folderid"), me.userid);
      if (!folder) return folderNotFound();
      const ids = new Set(ctx.params.array("deviationids").map((s) => s.toUpperCase()));
      if (ids.size === 0) return ERR.required("deviationids");
      folder.deviationIds = folder.deviationIds.filter((id) => !ids.has(id));
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/gallery/folders/update",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const me = actingUser(ctx);
      const folder = findFolder(ctx, ctx.params.get("folderid"), me.userid);
      if (!folder) return folderNotFound();
      const name = ctx.params.get("name");
      const description = ctx.params.get("description");
      if (name !== undefined && name !== "") folder.name = name;
      if (description !== undefined) folder.description = description;
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/gallery/folders/move",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const me = actingUser(ctx);
      const folder = findFolder(ctx, ctx.params.get("folderid"), me.userid);
      if (!folder) return folderNotFound();
      const parentId = ctx.params.get("parentid") ?? ctx.params.get("parent_folderid");
      const parent = parentId ? findFolder(ctx, parentId, me.userid) : undefined;
      if (parentId && !parent) return folderNotFound();
      folder.parent = parent?.folderid ?? null;
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/gallery/folders/update_deviation_order",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const me = actingUser(ctx);
      const folder = findFolder(ctx, ctx.params.get("folderid"), me.userid);
      if (!folder) return folderNotFound();
      const id = ctx.params.get("deviationid")?.toUpperCase();
      const position = ctx.params.int("position");
      if (!id || !folder.deviationIds.includes(id)) return ERR.validation({ deviationid: "deviationid is not in this folder" });
      if (typeof position !== "number" || position < 0) return ERR.required("position");
      folder.deviationIds.splice(folder.deviationIds.indexOf(id), 1);
      folder.deviationIds.splice(Math.min(position, folder.deviationIds.length), 0, id);
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/gallery/folders/update_order",
    scopes: WRITE,
    userOnly: true,
    handler(ctx) {
      const me = actingUser(ctx);
      const folder = findFolder(ctx, ctx.params.get("folderid"), me.userid);
      if (!folder) return folderNotFound();
      const position = ctx.params.int("position");
      if (typeof position !== "number" || position < 0) return ERR.required("position");
      const folders = ctx.world.data.galleryFolders;
      folders.splice(folders.indexOf(folder), 1);
      const mine = folders.filter((f) => f.ownerId === me.userid);
      const anchor = mine[Math.min(position, mine.length - 1)];
      folders.splice(anchor && position < mine.length ? folders.indexOf(anchor) : folders.length, 0, folder);
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
  for (const id of ids) {
    const d = getDeviation(ctx.world, id);
    if (!d || d.authorId !== me.userid) return ERR.validation({ deviationids: `deviation ${id} is not yours` });
  }
  for (const id of ids) if (!target.deviationIds.includes(id)) target.deviationIds.unshift(id);
  if (source) source.deviationIds = source.deviationIds.filter((id) => !ids.includes(id));
  touch(ctx.world);
  return success();
}
