// The client's methods for messages, notes and the deprecated feed; each goes through its catalogue entry.
import type { PageIterator } from "../transport.ts";
import {
  type Deviation,
  DeviationSchema,
  type FeedItem,
  FeedItemSchema,
  type FeedSettings,
  FeedSettingsSchema,
  type Message,
  MessageSchema,
  type Note,
  type NoteFolderCreateResult,
  NoteFolderCreateResultSchema,
  type NoteFoldersResponse,
  NoteFoldersResponseSchema,
  NoteSchema,
  type NoteSendResult,
  NoteSendResultSchema,
  type Success,
  SuccessSchema,
} from "../types.ts";
import type { ClientBase } from "./core.ts";
import { bracketed, definedOnly, splitList } from "./forms.ts";
import type { CursorListOptions, FeedbackType, FeedInclude, MessageFolderParams, OffsetListOptions } from "./params.ts";

/** The message, note and feed methods of the client, mixed into DaClient (src/api/client.ts). */
export function MessagesMethods<B extends ClientBase>(Base: B) {
  return class extends Base {
    // ---- messages and notes -------------------------------------------------------------------------
    messagesFeed(params: MessageFolderParams & CursorListOptions = {}): PageIterator<Message> {
      const { stack, folderid, ...list } = params;
      return this.cursor("messages.feed", { stack, folderid }, MessageSchema, list);
    }

    feedback(params: { type: FeedbackType } & MessageFolderParams & OffsetListOptions): PageIterator<Message> {
      const { list, rest } = splitList(params);
      return this.offset("messages.feedback", rest, MessageSchema, list);
    }

    feedbackStack(stackid: string, params: OffsetListOptions = {}): PageIterator<Message> {
      return this.offset("messages.feedback.stack", { stackid }, MessageSchema, params);
    }

    mentions(params: MessageFolderParams & OffsetListOptions = {}): PageIterator<Message> {
      const { list, rest } = splitList(params);
      return this.offset("messages.mentions", rest, MessageSchema, list);
    }

    mentionsStack(stackid: string, params: OffsetListOptions = {}): PageIterator<Message> {
      return this.offset("messages.mentions.stack", { stackid }, MessageSchema, params);
    }

    /**
     * Notes of a folder (inbox when omitted). Clients disagree on the parameter's name (`folder` in
     * DeviantArtFs 2024, `folderid` in 2020: docs/service-behaviour.md#notes-folder-param): both are sent.
     */
    notes(params: { folder?: string } & OffsetListOptions = {}): PageIterator<Note> {
      const { list, rest } = splitList(params);
      return this.offset("notes.list", rest.folder === undefined ? rest : { ...rest, folderid: rest.folder }, NoteSchema, list);
    }

    note(noteid: string): Promise<Note> {
      return this.get("notes.get", { noteid }, NoteSchema);
    }

    noteFolders(): Promise<NoteFoldersResponse> {
      return this.get("notes.folders", {}, NoteFoldersResponseSchema);
    }

    // ---- legacy feed (deprecated endpoints) ---------------------------------------------------------
    feedHome(params: CursorListOptions = {}): PageIterator<FeedItem> {
      return this.cursor("feed.home", {}, FeedItemSchema, params);
    }

    feedHomeBucket(bucketid: string, params: OffsetListOptions = {}): PageIterator<Deviation> {
      return this.offset("feed.home.bucket", { bucketid }, DeviationSchema, params);
    }

    feedNotifications(params: CursorListOptions = {}): PageIterator<FeedItem> {
      return this.cursor("feed.notifications", {}, FeedItemSchema, params);
    }

    feedProfile(params: CursorListOptions = {}): PageIterator<FeedItem> {
      return this.cursor("feed.profile", {}, FeedItemSchema, params);
    }

    feedSettings(): Promise<FeedSettings> {
      return this.get("feed.settings", {}, FeedSettingsSchema);
    }

    // ---- writes: notes (scope: note) ----------------------------------------------------------------
    /** Scope: note. `noteid` replies to that note. */
    noteSend(params: { to: readonly string[]; subject?: string; body: string; noteid?: string }): Promise<NoteSendResult> {
      return this.get("notes.send", { ...params, to: [...params.to] }, NoteSendResultSchema);
    }

    /** Scope: note. */
    notesMove(params: { noteids: readonly string[]; folderid: string }): Promise<Success> {
      return this.get("notes.move", { ...params, noteids: [...params.noteids] }, SuccessSchema);
    }

    /** Scope: note. */
    notesMark(params: { noteids: readonly string[]; mark_as: "read" | "unread" | "starred" | "notstarred" | "spam" }): Promise<Success> {
      return this.get("notes.mark", { ...params, noteids: [...params.noteids] }, SuccessSchema);
    }

    /** Scope: note. */
    notesDelete(params: { noteids: readonly string[]; folderid?: string }): Promise<Success> {
      return this.get("notes.delete", { ...params, noteids: [...params.noteids] }, SuccessSchema);
    }

    /** Scope: note. */
    noteFolderCreate(params: { title: string; parentid?: string }): Promise<NoteFolderCreateResult> {
      return this.get("notes.folders.create", params, NoteFolderCreateResultSchema);
    }

    /** Scope: note. */
    noteFolderRemove(folderid: string): Promise<Success> {
      return this.get("notes.folders.remove", { folderid }, SuccessSchema);
    }

    /** Scope: note. */
    noteFolderRename(folderid: string, title: string): Promise<Success> {
      return this.get("notes.folders.rename", { folderid, title }, SuccessSchema);
    }

    // ---- writes: messages ---------------------------------------------------------------------------
    /** Scope: message. Deletes one message (`messageid`) or a whole stack (`stackid`). */
    messagesDelete(params: { folderid?: string } & ({ messageid: string; stackid?: never } | { stackid: string; messageid?: never })): Promise<Success> {
      return this.get("messages.delete", params, SuccessSchema);
    }

    // ---- writes: feed settings ----------------------------------------------------------------------
    /** Scope: feed. Sends only the flags given, as `include[...]`. */
    feedSettingsUpdate(include: Partial<FeedInclude>): Promise<Success> {
      return this.get("feed.settings.update", bracketed("include", definedOnly(include)), SuccessSchema);
    }
  };
}
