// Catalogue entries of one area (messages, notes and the deprecated feed); each carries its response schema, so the
// client validates an answer with the entry it sent the request for.
import {
  DeviationSchema,
  FeedItemSchema,
  FeedSettingsSchema,
  MessageSchema,
  NoteFolderCreateResultSchema,
  NoteFoldersResponseSchema,
  NoteSchema,
  NoteSendResultSchema,
  SuccessSchema,
} from "../types.ts";
import { USER, WRITE, offset, cursor, LIST, FEED_DEPRECATED, type Entry } from "./operation.ts";
import { offsetPage, cursorResults, cursorItems, offsetItems } from "./pages.ts";

// Feed (deprecated)
export const FEED_ENTRIES = [
  { id: "feed.home", method: "GET", path: "/feed/home", ...USER(["feed"]), ...cursor("items"), deprecated: FEED_DEPRECATED, matureContent: true,
    purpose: "Watch feed",
    response: cursorItems(FeedItemSchema) },
  { id: "feed.home.bucket", method: "GET", path: "/feed/home/{bucketid}", ...USER(["feed"]), ...offset(50, "items"), matureContent: true,
    deprecated: FEED_DEPRECATED, purpose: "Content related to one watch event",
    response: offsetItems(DeviationSchema) },
  { id: "feed.notifications", method: "GET", path: "/feed/notifications", ...USER(["feed"]), ...cursor("items"),
    deprecated: FEED_DEPRECATED, purpose: "Notifications",
    response: cursorItems(FeedItemSchema) },
  { id: "feed.profile", method: "GET", path: "/feed/profile", ...USER(["feed"]), ...cursor("items"), deprecated: FEED_DEPRECATED,
    purpose: "Profile feed",
    response: cursorItems(FeedItemSchema) },
  { id: "feed.settings", method: "GET", path: "/feed/settings", ...USER(["feed"]), deprecated: FEED_DEPRECATED, purpose: "Feed settings",
    response: FeedSettingsSchema },
  { id: "feed.settings.update", method: "POST", path: "/feed/settings/update", ...WRITE(["feed"]), deprecated: FEED_DEPRECATED,
    purpose: "Change feed settings",
    response: SuccessSchema },
] as const satisfies readonly Entry[];

// Messages
export const MESSAGES_ENTRIES = [
  { id: "messages.delete", method: "POST", path: "/messages/delete", ...WRITE(["message"]), purpose: "Delete a message or a message stack",
    response: SuccessSchema },
  { id: "messages.feed", method: "GET", path: "/messages/feed", ...USER(["message"]), ...cursor("results"), purpose: "Feed of all messages",
    response: cursorResults(MessageSchema) },
  { id: "messages.feedback", method: "GET", path: "/messages/feedback", ...USER(["message"]), ...offset(5), purpose: "Feedback messages",
    note: "`type` is required; max limit 5 in DeviantArtFs 2026, 50 in 2020 (UNCERTAIN)",
    response: offsetPage(MessageSchema) },
  { id: "messages.feedback.stack", method: "GET", path: "/messages/feedback/{stackid}", ...USER(["message"]), ...offset(50),
    purpose: "Messages in a feedback stack",
    response: offsetPage(MessageSchema) },
  { id: "messages.mentions", method: "GET", path: "/messages/mentions", ...USER(["message"]), ...offset(50), purpose: "Mention messages",
    response: offsetPage(MessageSchema) },
  { id: "messages.mentions.stack", method: "GET", path: "/messages/mentions/{stackid}", ...USER(["message"]), ...offset(50),
    purpose: "Messages in a mentions stack",
    response: offsetPage(MessageSchema) },
] as const satisfies readonly Entry[];

// Notes (scope `note` is inferred from its name, docs/service-behaviour.md#scopes)
export const NOTES_ENTRIES = [
  { id: "notes.list", method: "GET", path: "/notes", ...USER(["note"]), ...offset(24), purpose: "List notes",
    note: "max limit 24 in DeviantArtFs 2024, 50 in 2020; folder param `folder` (2024) vs `folderid` (2020), UNCERTAIN",
    response: offsetPage(NoteSchema) },
  { id: "notes.get", method: "GET", path: "/notes/{noteid}", ...USER(["note"]), purpose: "One note",
    response: NoteSchema },
  { id: "notes.delete", method: "POST", path: "/notes/delete", ...WRITE(["note"]), purpose: "Delete one or several notes",
    response: SuccessSchema },
  { id: "notes.folders", method: "GET", path: "/notes/folders", ...USER(["note"]), ...LIST, purpose: "List note folders",
    response: NoteFoldersResponseSchema },
  { id: "notes.folders.create", method: "POST", path: "/notes/folders/create", ...WRITE(["note"]), purpose: "Create a note folder",
    response: NoteFolderCreateResultSchema },
  { id: "notes.folders.remove", method: "POST", path: "/notes/folders/remove/{folderid}", ...WRITE(["note"]), purpose: "Delete a note folder",
    response: SuccessSchema },
  { id: "notes.folders.rename", method: "POST", path: "/notes/folders/rename/{folderid}", ...WRITE(["note"]), purpose: "Rename a note folder",
    response: SuccessSchema },
  { id: "notes.mark", method: "POST", path: "/notes/mark", ...WRITE(["note"]), purpose: "Mark notes",
    response: SuccessSchema },
  { id: "notes.move", method: "POST", path: "/notes/move", ...WRITE(["note"]), purpose: "Move notes to a folder",
    response: SuccessSchema },
  { id: "notes.send", method: "POST", path: "/notes/send", ...WRITE(["note"]), purpose: "Send a note",
    response: NoteSendResultSchema },
] as const satisfies readonly Entry[];
