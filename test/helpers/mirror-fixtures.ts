// Factories of the service's objects (parsed through the client's zod schemas, as handlers receive them)
// and a fresh mirror database per test file with a pg pool and an account row.
import type pg from "pg";
import {
  CommentSchema,
  DeviationSchema,
  FeedItemSchema,
  MessageSchema,
  MetadataSchema,
  NoteSchema,
  ProfileSchema,
  UserSchema,
  WatchEntrySchema,
  type Comment,
  type Deviation,
  type FeedItem,
  type Message,
  type Metadata,
  type Note,
  type Profile,
  type User,
  type WatchEntry,
} from "../../src/api/types.ts";
import { createPgPool } from "../../src/db/connect.ts";
import type { Queryable } from "../../src/db/with-transaction.ts";
import { createTestDatabase, type TestDatabase } from "./db.ts";

export type MirrorDb = { db: TestDatabase; pool: pg.Pool; drop(): Promise<void> };

export async function createMirrorDb(): Promise<MirrorDb> {
  const db = await createTestDatabase();
  const pool = createPgPool(db.url, 4);
  return {
    db,
    pool,
    async drop() {
      await pool.end();
      await db.drop();
    },
  };
}

/** Inserts an account row (the accounts table belongs to the auth layer; only its id matters here). */
export async function insertAccount(db: Queryable, name: string, userId: string | null = null): Promise<number> {
  const { rows } = await db.query<{ id: number }>("INSERT INTO accounts (name, user_id, username, updated_at) VALUES ($1, $2, $1, now()) RETURNING id", [
    name,
    userId,
  ]);
  return (rows[0] as { id: number }).id;
}

/** A Queryable that counts the statements run through it. */
export function countingQueryable(inner: Queryable): Queryable & { statements: string[] } {
  const statements: string[] = [];
  return {
    statements,
    query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) {
      statements.push(text);
      return inner.query<R>(text, values);
    },
  };
}

/** A deterministic uppercase UUID, as the service spells deviation and user ids. */
export function uuid(n: number, prefix = "0000"): string {
  return `${prefix.padStart(8, "0")}-0000-4000-8000-${n.toString(16).padStart(12, "0")}`.toUpperCase();
}

/** A wixmp-style signed URL; a new token is what the service hands out on every fetch. */
export function signedUrl(path: string, token: string): string {
  return `https://images-wixmp-ed30a86b8c4ca887773594c2.wixmp.com/f/${path}?token=${token}`;
}

export const at = (iso: string) => new Date(iso);

export function userJson(n: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    userid: uuid(n, "u"),
    username: `artist${n}`,
    usericon: `https://a.deviantart.net/avatars/a/r/artist${n}.png?${n}`,
    type: "regular",
    ...extra,
  };
}

export function makeUser(n: number, extra: Record<string, unknown> = {}): User {
  return UserSchema.parse(userJson(n, extra));
}

export function makeProfile(n: number, extra: Record<string, unknown> = {}): Profile {
  return ProfileSchema.parse({
    user: userJson(n),
    profile_url: `https://www.deviantart.com/artist${n}`,
    user_is_artist: true,
    artist_level: "Hobbyist",
    artist_specialty: "Digital Art",
    real_name: `Artist Number ${n}`,
    tagline: "drawing things",
    countryid: 1,
    country: "Atlantis",
    website: `https://artist${n}.example`,
    bio: "<p>hello</p>",
    cover_photo: null,
    stats: { user_deviations: 10, user_favourites: 20, user_comments: 5, profile_pageviews: 100, profile_comments: 3 },
    ...extra,
  });
}

export type DeviationFixture = {
  n: number;
  author?: number;
  title?: string;
  token?: string;
  favourites?: number;
  comments?: number;
  publishedTime?: string;
  kind?: "image" | "journal" | "literature";
  extra?: Record<string, unknown>;
};

export function deviationJson(f: DeviationFixture): Record<string, unknown> {
  const token = f.token ?? "tok1";
  const author = f.author ?? 1;
  const kind = f.kind ?? "image";
  const base: Record<string, unknown> = {
    deviationid: uuid(f.n),
    printid: null,
    url: `https://www.deviantart.com/artist${author}/${kind === "journal" ? "journal" : "art"}/work-${f.n}-${1000 + f.n}`,
    title: f.title ?? `Work ${f.n}`,
    is_favourited: false,
    is_deleted: false,
    is_published: true,
    author: userJson(author),
    stats: { comments: f.comments ?? 1, favourites: f.favourites ?? 10 },
    published_time: f.publishedTime ?? String(1700000000 + f.n * 3600),
    allows_comments: true,
    is_mature: false,
    is_downloadable: kind === "image",
    thumbs: [],
  };
  if (kind === "image") {
    base.preview = { src: signedUrl(`p${f.n}.jpg/v1/fill/w_800/p${f.n}-pre.jpg`, token), width: 800, height: 600, transparency: false };
    base.content = { src: signedUrl(`p${f.n}.jpg/v1/fill/w_1920/p${f.n}.jpg`, token), width: 1920, height: 1440, transparency: false, filesize: 123456 };
    base.download_filesize = 234567;
  } else {
    base.excerpt = `The opening words of ${f.n}`;
  }
  return { ...base, ...f.extra };
}

export function makeDeviation(f: DeviationFixture): Deviation {
  return DeviationSchema.parse(deviationJson(f));
}

export function makeTombstone(n: number): Deviation {
  return DeviationSchema.parse({ deviationid: uuid(n), printid: null, is_deleted: true });
}

export type MetadataFixture = { n: number; description?: string; tags?: string[]; views?: number; token?: string };

export function makeMetadata(f: MetadataFixture): Metadata {
  const token = f.token ?? "tok1";
  return MetadataSchema.parse({
    deviationid: uuid(f.n),
    printid: null,
    author: userJson(1),
    is_watching: false,
    title: `Work ${f.n}`,
    description: f.description ?? `<p>About ${f.n} <img src="${signedUrl(`d${f.n}.jpg`, token)}"></p>`,
    license: "No License",
    allows_comments: true,
    tags: (f.tags ?? ["art", `tag${f.n}`]).map((tag_name) => ({ tag_name, sponsored: false, sponsor: "" })),
    is_favourited: false,
    is_mature: false,
    submission: {
      creation_time: "2024-05-01T10:00:00-0700",
      category: "digitalart/paintings/other",
      file_size: "1 MB",
      resolution: "1920x1440",
      submitted_with: { app: "DA", url: "https://www.deviantart.com" },
    },
    stats: { views: f.views ?? 100, views_today: 1, favourites: 10, comments: 1, downloads: 2, downloads_today: 0 },
    camera: [],
  });
}

export function makeMessage(id: string, extra: Record<string, unknown> = {}): Message {
  return MessageSchema.parse({
    messageid: id,
    type: "fave",
    orphaned: false,
    ts: "2025-03-01T12:00:00-0800",
    is_new: true,
    originator: userJson(2),
    subject: { deviation: deviationJson({ n: 1 }) },
    html: `<b>artist2</b> faved your deviation`,
    ...extra,
  });
}

export function makeNote(id: string, extra: Record<string, unknown> = {}): Note {
  return NoteSchema.parse({
    noteid: id,
    ts: "2025-04-01T09:00:00+0000",
    unread: true,
    starred: false,
    sent: false,
    subject: `Hello ${id}`,
    preview: "Hi there",
    body: "<p>Hi there, a commission?</p>",
    user: userJson(2),
    recipients: [userJson(9)],
    ...extra,
  });
}

export function makeFeedItem(n: number, extra: Record<string, unknown> = {}): FeedItem {
  return FeedItemSchema.parse({
    ts: `2025-05-0${(n % 9) + 1}T10:00:00-0700`,
    type: "deviation_submitted",
    by_user: userJson(3),
    deviations: [deviationJson({ n: 100 + n, author: 3 })],
    ...extra,
  });
}

export function makeComment(id: string, extra: Record<string, unknown> = {}): Comment {
  return CommentSchema.parse({
    commentid: id,
    parentid: null,
    posted: "2025-02-01T08:00:00-0800",
    replies: 0,
    hidden: null,
    body: "Lovely colours",
    likes: 0,
    user: userJson(4),
    ...extra,
  });
}

export function makeWatchEntry(n: number, extra: Record<string, unknown> = {}): WatchEntry {
  return WatchEntrySchema.parse({
    user: userJson(n),
    is_watching: false,
    lastvisit: null,
    watch: { friend: false, deviations: true, journals: true, forum_threads: false, critiques: false, scraps: false, activity: true, collections: true },
    ...extra,
  });
}
