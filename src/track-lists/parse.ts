// Reads a track list (`dvault track import`): usernames one a line, OPML from a feed reader or another archiver,
// or dvault's own JSON export. Tolerant of what other tools write; every entry that names no user is kept with
// the reason, so the import can say what it could not resolve.
import path from "node:path";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { z } from "zod";
import { definedOnly } from "../api/client/forms.ts";
import { UserError } from "../errors.ts";
import { userFromText } from "./username.ts";

export const TRACK_LIST_FORMATS = ["opml", "txt", "json"] as const;
export type TrackListFormat = (typeof TRACK_LIST_FORMATS)[number];

/** Per-user options a JSON list may carry: the columns of tracked_users (docs/schema.md). */
export type TrackEntryOptions = { account?: string; tokenKind?: "user" | "client"; userid?: string | null; limitation?: string | null };

export type TrackEntry = { username: string; where: string; options: TrackEntryOptions };
export type Unresolved = { input: string; where: string; reason: string };
export type TrackList = { format: TrackListFormat; entries: TrackEntry[]; unresolved: Unresolved[] };

/** The format of a file: `--format` if given, else its extension, else its first characters. */
export function detectFormat(file: string, text: string, forced?: string): TrackListFormat {
  if (forced !== undefined) return formatNamed(forced);
  const byName = formatOfFileName(file);
  if (byName) return byName;
  const start = text.trimStart();
  if (start.startsWith("<")) return "opml";
  if (start.startsWith("{") || start.startsWith("[")) return "json";
  return "txt";
}

/** --format's value, or a UserError saying which values there are. */
export function formatNamed(name: string): TrackListFormat {
  const f = name.toLowerCase();
  if ((TRACK_LIST_FORMATS as readonly string[]).includes(f)) return f as TrackListFormat;
  throw new UserError(`unknown format "${name}": use --format opml, txt or json`);
}

/** The format a file name's extension says, if it says one. */
export function formatOfFileName(file: string): TrackListFormat | undefined {
  const ext = path.extname(file).toLowerCase();
  if (ext === ".opml" || ext === ".xml") return "opml";
  if (ext === ".json") return "json";
  if (ext === ".txt" || ext === ".list" || ext === ".lst") return "txt";
  return undefined;
}

/** Parses the text of a track list; a file that is not of its format at all is a UserError naming the file. */
export function parseTrackList(file: string, raw: string, forced?: string): TrackList {
  const text = raw.replace(/^\uFEFF/, "");
  if (text.includes("\0")) throw new UserError(`${file} is not a text file: give a list of usernames, an OPML file or a dvault JSON export`);
  const format = detectFormat(file, text, forced);
  const list: TrackList = { format, entries: [], unresolved: [] };
  if (format === "txt") parseTxt(text, list);
  else if (format === "opml") parseOpml(file, text, list);
  else parseJson(file, text, list);
  return list;
}

/** How much of a file's text the report quotes: a 10 MB line or title must not flood the terminal or the JSON. */
const QUOTED_CHARS = 200;

/** `text` cut to what the report quotes, saying that it was cut. */
export function quoted(text: string): string {
  return text.length <= QUOTED_CHARS ? text : `${text.slice(0, QUOTED_CHARS - 1)}… (${text.length} characters)`;
}

/** An entry that names no user, with what the report quotes of it. */
function unresolved(list: TrackList, input: string, where: string, reason: string): void {
  list.unresolved.push({ input: quoted(input), where: quoted(where), reason: quoted(reason) });
}

function add(list: TrackList, input: string, where: string, options: TrackEntryOptions = {}): void {
  const named = userFromText(input);
  if ("username" in named) list.entries.push({ username: named.username, where, options });
  else unresolved(list, input, where, named.unresolved);
}

// ---- txt ------------------------------------------------------------------------------------------------

/** gallery-dl input files put per-URL options on "-key = value" lines; they name no user. */
const OPTION_LINE = /^-\s*[\w.-]+\s*=/;
/** Characters of a line kept: no username or URL comes near it, and a longer line costs no more memory than this. */
const LINE_KEPT_CHARS = 8192;

function parseTxt(text: string, list: TrackList): void {
  const lines = new TxtLines(list);
  lines.push(text);
  lines.end();
}

/**
 * Lines of a txt list as its text arrives, piece by piece (a list of any size is read as a stream,
 * src/track-lists/files.ts): each complete line goes into `list`; of a line longer than LINE_KEPT_CHARS only
 * that much is held, and it is reported with its length.
 */
export class TxtLines {
  private carry = "";
  private carryChars = 0;
  private lineNo = 0;
  /** The last piece ended in "\r": a "\n" opening the next one belongs to it. */
  private afterCr = false;

  constructor(private readonly list: TrackList) {}

  push(text: string): void {
    let from = this.afterCr && text.startsWith("\n") ? 1 : 0;
    this.afterCr = false;
    const newline = /\r\n?|\n/g;
    newline.lastIndex = from;
    for (let m = newline.exec(text); m; m = newline.exec(text)) {
      this.keep(text.slice(from, m.index));
      this.line();
      from = newline.lastIndex;
      if (m[0] === "\r" && from === text.length) this.afterCr = true;
    }
    this.keep(text.slice(from));
  }

  end(): void {
    if (this.carryChars > 0) this.line();
  }

  private keep(piece: string): void {
    this.carryChars += piece.length;
    if (this.carry.length < LINE_KEPT_CHARS) this.carry += piece.slice(0, LINE_KEPT_CHARS - this.carry.length);
  }

  private line(): void {
    this.lineNo += 1;
    const [line, chars, where] = [this.carry, this.carryChars, `line ${this.lineNo}`];
    this.carry = "";
    this.carryChars = 0;
    if (chars > LINE_KEPT_CHARS) {
      this.list.unresolved.push({ input: `${line.slice(0, QUOTED_CHARS - 1)}… (${chars} characters)`, where, reason: "longer than any username or URL" });
      return;
    }
    // A comment starts a line or follows a space: a URL's own "#fragment" stays.
    const content = line.replace(/(^|\s)#.*$/, "").trim();
    if (content === "" || OPTION_LINE.test(content)) return;
    add(this.list, content, where);
  }
}

// ---- OPML -----------------------------------------------------------------------------------------------

/** The attributes an outline may carry a URL in; readers differ in case (xmlUrl, xmlurl) and some use url. */
const URL_ATTRIBUTES = ["xmlurl", "htmlurl", "url"];

type XmlNode = Record<string, unknown>;

function parseOpml(file: string, text: string, list: TrackList): void {
  const valid = XMLValidator.validate(text);
  if (valid !== true) throw new UserError(`${file} is not valid OPML (line ${valid.err.line}: ${valid.err.msg}): fix the file or give --format txt`);
  let doc: XmlNode;
  try {
    doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@", processEntities: true, htmlEntities: true }).parse(text) as XmlNode;
  } catch (err) {
    // The parser's own limits (folders nested past 100 levels, entities past its caps) refuse a hostile or
    // broken file with a plain Error: it is still the file that is wrong, said in one line.
    throw new UserError(`${file} could not be read as OPML (${quoted((err as Error).message)}): fix the file or give --format txt`);
  }
  const opml = childNamed(doc, "opml");
  const body = opml ? childNamed(opml, "body") : undefined;
  if (!body) throw new UserError(`${file} has no <opml><body>: it is not an OPML file (give --format txt or json if it is another list)`);
  const counter = { n: 0 };
  for (const outline of childrenNamed(body, "outline")) walkOutline(outline, list, counter);
}

function walkOutline(node: XmlNode, list: TrackList, counter: { n: number }): void {
  counter.n += 1;
  const attrs = attributes(node);
  const label = attrs.text ?? attrs.title ?? "";
  const where = `outline ${counter.n}${label ? ` "${quoted(label)}"` : ""}`;
  const children = childrenNamed(node, "outline");
  const urls = URL_ATTRIBUTES.map((a) => attrs[a]).filter((u): u is string => typeof u === "string" && u.trim() !== "");
  if (urls.length > 0) {
    // The first URL that names a user wins: a reader may keep a foreign xmlUrl (a bridge) beside the profile's htmlUrl.
    const named = urls.map((u) => ({ u, r: userFromText(u) }));
    const hit = named.find((n) => "username" in n.r);
    if (hit && "username" in hit.r) list.entries.push({ username: hit.r.username, where, options: {} });
    else if (named[0] && "unresolved" in named[0].r) unresolved(list, named[0].u, where, named[0].r.unresolved);
  } else if (children.length === 0 && attrs.type !== undefined) {
    // A subscription without a URL is reported; a leaf without type is an empty folder, which names nobody.
    unresolved(list, label, where, "the outline has no xmlUrl or htmlUrl");
  }
  for (const child of children) walkOutline(child, list, counter);
}

/** An element's attributes by lower-cased name. */
function attributes(node: XmlNode): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(node)) if (k.startsWith("@") && typeof v === "string") out[k.slice(1).toLowerCase()] = v;
  return out;
}

function childrenNamed(node: XmlNode, name: string): XmlNode[] {
  const found: XmlNode[] = [];
  for (const [k, v] of Object.entries(node)) {
    if (k.toLowerCase() !== name) continue;
    for (const item of Array.isArray(v) ? v : [v]) if (item && typeof item === "object") found.push(item as XmlNode);
    // A self-closed element with no attributes parses as "": it carries nothing.
  }
  return found;
}

function childNamed(node: XmlNode, name: string): XmlNode | undefined {
  return childrenNamed(node, name)[0];
}

// ---- JSON -----------------------------------------------------------------------------------------------

const JsonUserSchema = z.looseObject({
  username: z.string().optional(),
  url: z.string().optional(),
  account: z.string().optional(),
  tokenKind: z.enum(["user", "client"]).optional(),
  userid: z.string().nullable().optional(),
  limitation: z.string().nullable().optional(),
});

function parseJson(file: string, text: string, list: TrackList): void {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new UserError(`${file} is not valid JSON (${(err as Error).message}): fix the file or give --format txt`);
  }
  // dvault's export is {version, users:[...]}; a bare array of names or objects is read as its users.
  const users = Array.isArray(doc) ? doc : doc && typeof doc === "object" ? (doc as { users?: unknown }).users : undefined;
  if (!Array.isArray(users)) throw new UserError(`${file} has no "users" list: a JSON track list is {"version": 1, "users": [{"username": ...}]}`);
  for (const [i, item] of users.entries()) jsonUser(list, item, `users[${i}]`);
}

function jsonUser(list: TrackList, item: unknown, where: string): void {
  if (typeof item === "string") {
    add(list, item, where);
    return;
  }
  const parsed = JsonUserSchema.safeParse(item);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const reason = `${issue?.path.join(".") || "entry"}: ${issue?.message ?? "not a user"}`;
    unresolved(list, JSON.stringify(item) ?? String(item), where, reason);
    return;
  }
  const { username, url, account, tokenKind, userid, limitation } = parsed.data;
  const input = username ?? url;
  if (input === undefined) {
    unresolved(list, JSON.stringify(item), where, "no username or url");
    return;
  }
  add(list, input, where, definedOnly({ account, tokenKind, userid, limitation }));
}
