// Writes a gallery-dl download folder from the simulator's dataset, as gallery-dl lays one out
// (docs/service-behaviour.md#gallery-dl-layout): default names (some with metadata sidecars), base-36
// names, a name with the title only (found through the archive database), a multi-image post in the newer
// naming, a png original beside a jpg preview of the same work, a fullview in place of an original, a
// favourite and another user's folder, and files that match nothing. Originals are the bytes the
// simulator's CDN serves (no quota spent); renditions are fetched from it over HTTP like gallery-dl does; all
// of them pictures (src/simulator/pictures.ts), as the import checks.
import { randomBytes, createHash } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import initSqlJs from "sql.js";
import type { GroundTruth, Simulator } from "../../src/simulator/server.ts";
import { makeImage } from "./image-fixtures.ts";

/** A deviation of the simulator's ground truth (read-only). */
type SimDeviation = GroundTruth["deviations"] extends ReadonlyMap<string, infer D> ? D : never;

export type FixtureFile = { deviationid: string; file: string; sha256: string };

export type GalleryDlFixture = {
  /** The folder to import (it holds deviantart/). */
  base: string;
  archiveFile: string;
  /** Files that must be adopted as their deviation's original. */
  originals: FixtureFile[];
  /** A png original and a jpg preview of the same work. */
  pair: { deviationid: string; original: string; preview: string };
  /** The further image of a multi-image post. */
  extraImage: FixtureFile;
  /** A fullview where the original is missing: a stand-in that stays wanted for an upgrade. */
  standIn: FixtureFile;
  /** Files that match nothing, with the report's reason key. */
  unmatched: Array<{ file: string; reason: "unknown" | "noId" | "partial" }>;
  /** Every file written (sidecars and the archive included), for checking they are left unchanged. */
  written: string[];
  /** The user folders written: the owner's and one other user's. */
  users: { owner: string; other: string };
};

type Deviation = Record<string, unknown> & { content?: { src: string }; preview?: { src: string }; url: string; title: string };

export async function writeGalleryDlFixture(sim: Simulator, base: string): Promise<GalleryDlFixture> {
  const truth = sim.truth;
  const owner = truth.users.get(truth.ownerId);
  if (!owner) throw new Error("the simulator has no owner");
  const token = sim.issueUserToken().access_token;
  const fetchJson = async (id: string): Promise<Deviation> => {
    const res = await fetch(`${sim.apiUrl}/deviation/${id}`, { headers: { authorization: `Bearer ${token}` } });
    if (!res.ok) throw new Error(`fixture: /deviation/${id} answered ${res.status}`);
    return (await res.json()) as Deviation;
  };
  const fetchBytes = async (src: string): Promise<Buffer> => {
    const res = await fetch(src);
    if (!res.ok) throw new Error(`fixture: ${src.split("?")[0]} answered ${res.status}`);
    return Buffer.from(await res.arrayBuffer());
  };

  const usable = (d: SimDeviation) =>
    !d.isDeleted && d.kind === "image" && d.isDownloadable && d.image !== null && !d.tier && !d.premiumFolder && !d.isMultiMedia;
  const own = [...truth.deviations.values()].filter((d) => d.authorId === owner.userid && usable(d)).sort((a, b) => a.numericId - b.numericId);
  const png = own.find((d) => d.image?.ext === "png");
  const rest = own.filter((d) => d !== png);
  if (!png || rest.length < 8) throw new Error("fixture: the dataset needs at least 9 downloadable images of the owner, one a png");
  const [a1, a2, a3, b1, b2, titled, multi, standIn] = rest as [
    SimDeviation,
    SimDeviation,
    SimDeviation,
    SimDeviation,
    SimDeviation,
    SimDeviation,
    SimDeviation,
    SimDeviation,
  ];
  const favourite = favouriteOf(truth, owner.userid, usable);
  // Another user's work that is none of the owner's favourites: only that user's gallery lists it.
  const faved = new Set(truth.collectionFolders.filter((f) => f.ownerId === owner.userid).flatMap((f) => f.deviationIds));
  const other = [...truth.deviations.values()].find((d) => usable(d) && d.authorId !== owner.userid && !faved.has(d.deviationid) && !isGoneAuthor(truth, d));
  if (!other) throw new Error("fixture: no other user's downloadable image");
  const otherName = truth.users.get(other.authorId)?.username ?? "other";

  const userDir = path.join(base, "deviantart", owner.username);
  const written: string[] = [];
  const write = async (rel: string, bytes: Buffer | string): Promise<string> => {
    const abs = path.join(base, rel);
    await fs.mkdir(path.dirname(abs), { recursive: true });
    await fs.writeFile(abs, bytes);
    written.push(abs);
    return abs;
  };
  const rel = (dir: string, name: string) => path.relative(base, path.join(dir, name));
  const originals: FixtureFile[] = [];
  const original = async (d: SimDeviation, dir: string, name: string, sidecar: boolean): Promise<string> => {
    const bytes = await sim.fileBytes(d.deviationid);
    const abs = await write(rel(dir, name), bytes);
    if (sidecar)
      await write(rel(dir, `${name}.json`), JSON.stringify(sidecarOf(await fetchJson(d.deviationid), d, owner.username, { is_original: true }), null, 4));
    originals.push({ deviationid: d.deviationid, file: abs, sha256: sha(bytes) });
    return abs;
  };
  const archive: string[] = [];
  const key = (section: string, user: string, d: SimDeviation, ext: string) => archive.push(`deviantart${section}_${user.toLowerCase()}_${d.numericId}.${ext}`);

  // Default names, with a sidecar on two of them; base 36; the title only (the archive has its index).
  await original(a1, userDir, defaultName(a1), true);
  await original(a2, userDir, defaultName(a2), true);
  await original(a3, userDir, defaultName(a3), false);
  await original(b1, userDir, base36Name(b1, owner.username), false);
  await original(b2, userDir, base36Name(b2, owner.username), false);
  await original(titled, userDir, `${safeTitle(titled.title)}.${titled.image?.ext}`, false);
  for (const d of [a1, a2, a3, b1, b2, titled]) key("g", owner.username, d, d.image?.ext ?? "jpg");

  // A png original and a jpg preview of the same work.
  const pngFile = await original(png, userDir, defaultName(png), false);
  const pngJson = await fetchJson(png.deviationid);
  const previewFile = await write(rel(userDir, `deviantart_${png.numericId}_${safeTitle(png.title)}.jpg`), await fetchBytes(String(pngJson.preview?.src)));

  // A multi-image post, named as gallery-dl ≥ 1.29.3 names them: the first image is the API's original.
  await original(multi, userDir, `deviantart_${multi.numericId}_0_${safeTitle(multi.title)}_01.${multi.image?.ext}`, false);
  // Another picture (a multi-image post's images need not share the first one's proportions).
  const extraBytes = await makeImage(multi.image?.ext ?? "jpg", 320, 480, multi.numericId % 1000);
  const extraFile = await write(
    rel(userDir, `deviantart_${multi.numericId}_${multi.numericId + 7_000_000}_${safeTitle(multi.title)}_02.${multi.image?.ext}`),
    extraBytes,
  );

  // The fullview only (over quota, gallery-dl fell back to it): a stand-in for the original.
  const standJson = await fetchJson(standIn.deviationid);
  const standBytes = await fetchBytes(String(standJson.content?.src));
  const standFile = await write(rel(userDir, defaultName(standIn)), standBytes);
  await write(rel(userDir, `${defaultName(standIn)}.json`), JSON.stringify(sidecarOf(standJson, standIn, owner.username, { is_original: false }), null, 4));

  // A favourite, and another user's gallery.
  await original(favourite, path.join(userDir, "Favourites"), defaultName(favourite), false);
  key("f", owner.username, favourite, favourite.image?.ext ?? "jpg");
  await original(other, path.join(base, "deviantart", otherName), defaultName(other), false);
  key("g", otherName, other, other.image?.ext ?? "jpg");

  // Files that match nothing: a work no listing has, a note of the user's, an unfinished download.
  const lost = await write(rel(userDir, "deviantart_987654321_Lost work.png"), randomBytes(12_345));
  const note = await write("readme.txt", "my DeviantArt downloads\n");
  const part = await write(rel(userDir, `${defaultName(a3)}.part`), randomBytes(1000));

  const archiveFile = path.join(base, "archive.sqlite3");
  await writeGalleryDlArchive(archiveFile, archive);
  written.push(archiveFile);

  return {
    base,
    archiveFile,
    originals,
    pair: { deviationid: png.deviationid, original: pngFile, preview: previewFile },
    extraImage: { deviationid: multi.deviationid, file: extraFile, sha256: sha(extraBytes) },
    standIn: { deviationid: standIn.deviationid, file: standFile, sha256: sha(standBytes) },
    unmatched: [
      { file: lost, reason: "unknown" },
      { file: note, reason: "noId" },
      { file: part, reason: "partial" },
    ],
    written,
    users: { owner: owner.username, other: otherName },
  };
}

/** gallery-dl's download archive (docs/service-behaviour.md#gallery-dl-archive) holding `entries`, as 1.25 creates it. */
export async function writeGalleryDlArchive(file: string, entries: readonly string[]): Promise<void> {
  const SQL = await initSqlJs();
  const db = new SQL.Database();
  db.run("CREATE TABLE archive (entry TEXT PRIMARY KEY) WITHOUT ROWID");
  db.run("BEGIN");
  for (const entry of entries) db.run("INSERT OR IGNORE INTO archive (entry) VALUES (?)", [entry]);
  db.run("COMMIT");
  await fs.writeFile(file, db.export());
  db.close();
}

/** What each file of `paths` is now: bytes, mode and time, to show the import changed none of them. */
export async function fileStates(paths: readonly string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const p of paths) {
    const st = await fs.stat(p);
    out[p] = `${sha(await fs.readFile(p))} ${st.mode.toString(8)} ${st.mtimeMs} ${st.size}`;
  }
  return out;
}

function favouriteOf(truth: GroundTruth, ownerId: string, usable: (d: SimDeviation) => boolean): SimDeviation {
  for (const folder of truth.collectionFolders) {
    if (folder.ownerId !== ownerId) continue;
    for (const id of folder.deviationIds) {
      const d = truth.deviations.get(id);
      if (d && usable(d) && d.authorId !== ownerId && !isGoneAuthor(truth, d)) return d;
    }
  }
  throw new Error("fixture: the owner has no downloadable favourite");
}

function isGoneAuthor(truth: GroundTruth, d: SimDeviation): boolean {
  const u = truth.users.get(d.authorId);
  return !u || u.isDeactivated || u.isSuspended === true;
}

/** gallery-dl's default: deviantart_{index}_{title}.{extension}, "/" made safe (its path-restrict on Linux). */
function defaultName(d: SimDeviation): string {
  return `deviantart_${d.numericId}_${safeTitle(d.title)}.${d.image?.ext ?? "jpg"}`;
}

/** The {filename} many users choose: title_by_author-d<index in base 36>. */
function base36Name(d: SimDeviation, username: string): string {
  return `${d.title.toLowerCase().replace(/\W/g, "_")}_by_${username.toLowerCase().replace(/\W/g, "_")}-d${d.numericId.toString(36)}.${d.image?.ext ?? "jpg"}`;
}

function safeTitle(title: string): string {
  return title.replace(/[/\0]/g, "_");
}

/** The deviation as gallery-dl's metadata post-processor writes it: the API object plus its own fields. */
function sidecarOf(json: Deviation, d: SimDeviation, username: string, extra: { is_original: boolean }): Record<string, unknown> {
  const src = extra.is_original ? `https://wixmp.example/f/${d.deviationid.toLowerCase()}/original.${d.image?.ext}?token=x` : String(json.content?.src ?? "");
  return {
    ...json,
    category: "deviantart",
    subcategory: "gallery",
    index: d.numericId,
    index_base36: d.numericId.toString(36),
    username,
    published_time: d.publishedTime,
    date: new Date(d.publishedTime * 1000).toISOString().replace("T", " ").slice(0, 19),
    filename: `${d.title.toLowerCase().replace(/\W/g, "_")}_by_${username.toLowerCase()}-d${d.numericId.toString(36)}`,
    extension: d.image?.ext,
    target: { src, filename: `${d.slug}.${d.image?.ext}`, extension: d.image?.ext },
    ...extra,
  };
}

function sha(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}
