// /notes/*: notes in folders (offset paging), note folders (count as a string), send, move, mark, delete.
import type { SimNote, SimUser } from "../dataset.ts";
import { findUser, isGone, simIso } from "../dataset.ts";
import { ERR, apiError, json, type Reply } from "../http.ts";
import { offsetPage } from "../paging.ts";
import { noteFolderJson, noteJson, userJson } from "../render.ts";
import { actingUser, touch, type ApiContext, type ApiRoute } from "../world.ts";
import { success } from "./common.ts";

const SCOPES = ["note"];

function folderById(ctx: ApiContext, id: string | undefined) {
  if (!id) return undefined;
  return ctx.world.data.noteFolders.find((f) => f.folderid === id || f.folderid === id.toUpperCase());
}

function folderNotFound(): Reply {
  return apiError(400, "invalid_request", "Folder not found.", { error_code: 0 });
}

function selectedNotes(ctx: ApiContext): SimNote[] | Reply {
  const ids = ctx.params.array("noteids");
  if (ids.length === 0) return ERR.required("noteids");
  const notes = ctx.world.data.notes.filter((n) => ids.includes(n.noteid));
  if (notes.length === 0) return apiError(400, "invalid_request", "Note not found.", { error_code: 0 });
  return notes;
}

export const noteRoutes: ApiRoute[] = [
  {
    methods: ["GET"],
    template: "/notes",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const id = ctx.params.get("folderid") ?? ctx.params.get("folder") ?? "1";
      let notes: SimNote[];
      if (id === "unread") notes = ctx.world.data.notes.filter((n) => n.unread);
      else if (id === "starred") notes = ctx.world.data.notes.filter((n) => n.starred);
      else {
        const folder = folderById(ctx, id);
        if (!folder) return folderNotFound();
        notes = ctx.world.data.notes.filter((n) => n.folderid === folder.folderid);
      }
      // 24 in current clients, 50 in 2020 ones (docs/service-behaviour.md#page-size-maxima).
      const maxLimit = ctx.world.mode === "current" ? 24 : 50;
      return offsetPage(ctx, notes, { maxLimit, render: (n) => noteJson(ctx.world, n) });
    },
  },
  {
    methods: ["GET"],
    template: "/notes/{noteid}",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const n = ctx.world.data.notes.find((x) => x.noteid === ctx.pathParams.noteid);
      if (!n) return apiError(400, "invalid_request", "Note not found.", { error_code: 0 });
      return json(200, noteJson(ctx.world, n));
    },
  },
  {
    methods: ["POST"],
    template: "/notes/delete",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const notes = selectedNotes(ctx);
      if (!Array.isArray(notes)) return notes;
      const gone = new Set(notes.map((n) => n.noteid));
      ctx.world.data.notes = ctx.world.data.notes.filter((n) => !gone.has(n.noteid));
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["GET"],
    template: "/notes/folders",
    scopes: SCOPES,
    userOnly: true,
    handler: (ctx) => json(200, { results: ctx.world.data.noteFolders.map((f) => noteFolderJson(ctx.world, f)) }),
  },
  {
    methods: ["POST"],
    template: "/notes/folders/create",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const title = ctx.params.get("title");
      if (!title) return ERR.required("title");
      const parentid = ctx.params.get("parentid");
      if (parentid && !folderById(ctx, parentid)) return folderNotFound();
      const f = { folderid: ctx.world.rng.uuid(), parentid: parentid ? (folderById(ctx, parentid)?.folderid ?? null) : null, title, system: false };
      ctx.world.data.noteFolders.push(f);
      touch(ctx.world);
      return json(200, { success: true, folderid: f.folderid, title: f.title });
    },
  },
  {
    methods: ["POST"],
    template: "/notes/folders/remove/{folderid}",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const f = folderById(ctx, ctx.pathParams.folderid);
      if (!f) return folderNotFound();
      if (f.system) return apiError(400, "invalid_request", "System folders cannot be removed.", { error_code: 1 });
      ctx.world.data.noteFolders = ctx.world.data.noteFolders.filter((x) => x !== f);
      for (const n of ctx.world.data.notes) if (n.folderid === f.folderid) n.folderid = n.sent ? "2" : "1";
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/notes/folders/rename/{folderid}",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const f = folderById(ctx, ctx.pathParams.folderid);
      if (!f) return folderNotFound();
      const title = ctx.params.get("title");
      if (!title) return ERR.required("title");
      if (f.system) return apiError(400, "invalid_request", "System folders cannot be renamed.", { error_code: 1 });
      f.title = title;
      touch(ctx.world);
      return json(200, { success: true, title });
    },
  },
  {
    methods: ["POST"],
    template: "/notes/mark",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const markAs = ctx.params.get("mark_as");
      const allowed = ["read", "unread", "starred", "notstarred", "spam"];
      if (!markAs || !allowed.includes(markAs)) return ERR.validation({ mark_as: `mark_as must be one of ${allowed.join(", ")}` });
      const notes = selectedNotes(ctx);
      if (!Array.isArray(notes)) return notes;
      for (const n of notes) {
        if (markAs === "read") n.unread = false;
        else if (markAs === "unread") n.unread = true;
        else if (markAs === "starred") n.starred = true;
        else if (markAs === "notstarred") n.starred = false;
      }
      if (markAs === "spam") {
        const gone = new Set(notes.map((n) => n.noteid));
        ctx.world.data.notes = ctx.world.data.notes.filter((n) => !gone.has(n.noteid));
      }
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/notes/move",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const f = folderById(ctx, ctx.params.get("folderid"));
      if (!f) return folderNotFound();
      const notes = selectedNotes(ctx);
      if (!Array.isArray(notes)) return notes;
      for (const n of notes) n.folderid = f.folderid;
      touch(ctx.world);
      return success();
    },
  },
  {
    methods: ["POST"],
    template: "/notes/send",
    scopes: SCOPES,
    userOnly: true,
    handler(ctx) {
      const to = ctx.params.array("to");
      if (to.length === 0) return ERR.required("to");
      const subject = ctx.params.get("subject") ?? "";
      const body = ctx.params.get("body") ?? "";
      if (body === "") return ERR.required("body");
      const me = actingUser(ctx);
      // docs/service-behaviour.md#note-send-per-recipient: one result per recipient, partial success in a 200.
      const results: Array<Record<string, unknown>> = [];
      for (const name of to) {
        const u: SimUser | undefined = findUser(ctx.world.data, name);
        if (!u || isGone(u)) {
          results.push({ success: false, user: { userid: null, username: name, usericon: null, type: null }, noteid: null });
          continue;
        }
        const note: SimNote = {
          noteid: String(80_000_000 + ctx.world.data.notes.length * 11 + ctx.world.rng.int(0, 10)),
          folderid: "2",
          ts: simIso(ctx.world.clock.nowMs()),
          unread: false,
          starred: false,
          sent: true,
          subject,
          body,
          fromId: me.userid,
          recipientIds: [u.userid],
        };
        ctx.world.data.notes.unshift(note);
        results.push({ success: true, user: userJson(ctx.world, u), noteid: note.noteid });
      }
      touch(ctx.world);
      return json(200, { results });
    },
  },
];
