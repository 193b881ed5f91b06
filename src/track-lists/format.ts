// Writes a track list (`dvault track export`): OPML 2.0 a feed reader subscribes to (the service's RSS of each
// user's gallery as xmlUrl, the profile as htmlUrl), usernames one a line, or JSON with every per-user option
// the tracked-user table holds, which `dvault track import` reads back as it was.
import type { TrackedUser } from "../db/tracked-user.repository.ts";
import { escapeHtml } from "../text/html.ts";
import type { TrackListFormat } from "./parse.ts";
import { profileUrl, rssUrl } from "./username.ts";

export type ExportedUser = Pick<TrackedUser, "username" | "userid" | "tokenKind" | "limitation" | "addedAt"> & { account: string };

/** The version of the JSON export; import reads any object with a users list. */
export const TRACK_LIST_JSON_VERSION = 1;

export function formatTrackList(format: TrackListFormat, users: readonly ExportedUser[], now: Date): string {
  switch (format) {
    case "txt":
      return users.map((u) => `${u.username}\n`).join("");
    case "json":
      return `${JSON.stringify({ version: TRACK_LIST_JSON_VERSION, exportedAt: now.toISOString(), users: users.map(jsonUser) }, null, 2)}\n`;
    case "opml":
      return opml(users, now);
    default: {
      const never: never = format;
      throw new Error(`unknown format ${String(never)}`);
    }
  }
}

function jsonUser(u: ExportedUser) {
  return { username: u.username, account: u.account, tokenKind: u.tokenKind, userid: u.userid, limitation: u.limitation, addedAt: u.addedAt.toISOString() };
}

function outline(u: ExportedUser, indent: string): string {
  const name = escapeHtml(u.username);
  return `${indent}<outline type="rss" text="${name}" title="${name}" xmlUrl="${escapeHtml(rssUrl(u.username))}" htmlUrl="${escapeHtml(profileUrl(u.username))}"/>`;
}

/** One flat list for one account; with several, an outline per account holds its users. */
function opml(users: readonly ExportedUser[], now: Date): string {
  const accounts = [...new Set(users.map((u) => u.account))];
  const body =
    accounts.length <= 1
      ? users.map((u) => outline(u, "    "))
      : accounts.flatMap((a) => [
          `    <outline text="${escapeHtml(a)}" title="${escapeHtml(a)}">`,
          ...users.filter((u) => u.account === a).map((u) => outline(u, "      ")),
          "    </outline>",
        ]);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<opml version="2.0">',
    "  <head>",
    "    <title>dvault tracked users</title>",
    `    <dateCreated>${now.toUTCString()}</dateCreated>`,
    "  </head>",
    "  <body>",
    ...body,
    "  </body>",
    "</opml>",
    "",
  ].join("\n");
}
