// The typed client: one method per operation dvault uses, each going through the catalogue (method, path,
// paging, page size, response schema) over any ApiTransport. Handlers call this, never the transport. The
// methods live by area in src/api/client/*.ts; this module composes them and keeps the import path stable.
import { operation, type OperationId, type Scope } from "./catalogue.ts";
import { BrowseMethods } from "./client/browse.ts";
import { ClientCore, type DaClientOptions } from "./client/core.ts";
import { DeviationMethods } from "./client/deviation.ts";
import { GalleryMethods } from "./client/gallery.ts";
import { MessagesMethods } from "./client/messages.ts";
import { StashMethods } from "./client/stash.ts";
import { UserMethods } from "./client/user.ts";
import type { ApiTransport } from "./transport.ts";

export type { ResponseOf } from "./catalogue.ts";
export { DEFAULT_PAGE_SIZE, responseSchema, type DaClientOptions } from "./client/core.ts";
export { journalUpdateForm } from "./client/forms.ts";
export type * from "./client/params.ts";

/** Write methods and the catalogue operation each one sends, so the scope a method needs can be named. */
export const WRITE_OPERATIONS = {
  fave: "collections.fave",
  unfave: "collections.unfave",
  collectionFolderCreate: "collections.folders.create",
  collectionFolderRemove: "collections.folders.remove",
  collectionFolderUpdate: "collections.folders.update",
  collectionFolderUpdateOrder: "collections.folders.update_order",
  collectionFolderUpdateDeviationOrder: "collections.folders.update_deviation_order",
  collectionFolderCopyDeviations: "collections.folders.copy_deviations",
  collectionFolderMoveDeviations: "collections.folders.move_deviations",
  collectionFolderRemoveDeviations: "collections.folders.remove_deviations",
  galleryFolderCreate: "gallery.folders.create",
  galleryFolderRemove: "gallery.folders.remove",
  galleryFolderUpdate: "gallery.folders.update",
  galleryFolderUpdateOrder: "gallery.folders.update_order",
  galleryFolderUpdateDeviationOrder: "gallery.folders.update_deviation_order",
  galleryFolderCopyDeviations: "gallery.folders.copy_deviations",
  galleryFolderMoveDeviations: "gallery.folders.move_deviations",
  galleryFolderRemoveDeviations: "gallery.folders.remove_deviations",
  galleryFolderMove: "gallery.folders.move",
  noteSend: "notes.send",
  notesMove: "notes.move",
  notesMark: "notes.mark",
  notesDelete: "notes.delete",
  noteFolderCreate: "notes.folders.create",
  noteFolderRemove: "notes.folders.remove",
  noteFolderRename: "notes.folders.rename",
  commentPostDeviation: "comments.post.deviation",
  commentPostProfile: "comments.post.profile",
  commentPostStatus: "comments.post.status",
  journalCreate: "deviation.journal.create",
  journalUpdate: "deviation.journal.update",
  literatureCreate: "deviation.literature.create",
  literatureUpdate: "deviation.literature.update",
  deviationEdit: "deviation.edit",
  stashSubmit: "stash.submit",
  stashPublish: "stash.publish",
  watch: "user.friends.watch",
  unwatch: "user.friends.unwatch",
  profileUpdate: "user.profile.update",
  statusPost: "user.statuses.post",
  feedSettingsUpdate: "feed.settings.update",
  messagesDelete: "messages.delete",
} as const satisfies Record<string, OperationId>;
export type WriteMethod = keyof typeof WRITE_OPERATIONS;

export class DaClient extends BrowseMethods(StashMethods(MessagesMethods(DeviationMethods(GalleryMethods(UserMethods(ClientCore)))))) {
  constructor(transport: ApiTransport, options: DaClientOptions = {}) {
    super(transport, options);
  }

  /** The scopes a write method needs (from the catalogue), e.g. for "grant scope X" messages and auth prompts. */
  static scopesFor(method: WriteMethod): readonly Scope[] {
    return operation(WRITE_OPERATIONS[method]).scopes;
  }
}
