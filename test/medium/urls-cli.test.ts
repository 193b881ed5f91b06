// "A URL is enough" and "every operation at hand" as a person runs them (bin/dvault.js in child processes, real
// Postgres, Redis and the simulator): `track add` takes what `track import` takes and asks the service that the user
// exists; `dvault add <deviation URL>` archives one work, row and file; `dvault api` calls catalogue operations with
// the stored token, refuses a write whose scope the grant lacks before any call, and `--list` shows the catalogue.
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { CATALOGUE } from "../../src/api/catalogue.ts";
import { DEFAULT_SCOPES } from "../../src/api/oauth.ts";
import { formatBytes } from "../../src/text/bytes.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { runDvaultInTty } from "../helpers/dvault-tty.ts";
import { storeOwnerGrant } from "../helpers/owner-grant.ts";

let h: DownloadHarness;

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: {
      dataset: {
        deviations: 4,
        galleryFolders: 3,
        collectionFolders: 0,
        favourites: 0,
        trackedUsers: 3,
        trackedUserDeviations: 4,
        messages: 0,
        notes: 0,
        feedItems: 0,
      },
      startTime: new Date(),
    },
  });
  // The owner's gallery in the mirror: its files are wanted (what `dvault add` must leave alone) and its folders
  // are what `dvault api gallery.folders` is compared with.
  await h.syncAll(["gallery"]);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

// Each test starts from the mirror the gallery sync made, whichever ran before it: nobody tracked, and no file
// in the downloads table but the owner's gallery's (still wanted).
beforeEach(async () => {
  await h.pool.query("DELETE FROM tracked_users");
  await h.pool.query("DELETE FROM downloads WHERE deviationid IN (SELECT deviationid FROM deviations WHERE author_userid <> $1)", [h.sim.truth.ownerId]);
});

/** Another user with a gallery (the artists the dataset made besides the owner). */
function artists(): { userid: string; username: string }[] {
  const t = h.sim.truth;
  const ids = [...new Set(t.galleryFolders.filter((f) => f.ownerId !== t.ownerId).map((f) => f.ownerId))];
  return ids.map((id) => t.users.get(id)!).map((u) => ({ userid: u.userid, username: u.username }));
}

function byName<T extends { username: string }>(rows: T[]): T[] {
  return rows.sort((a, b) => (a.username < b.username ? -1 : 1));
}

async function tracked(): Promise<{ username: string; userid: string | null }[]> {
  const { rows } = await h.pool.query<{ username: string; userid: string | null }>("SELECT username, userid FROM tracked_users WHERE removed_at IS NULL");
  return byName(rows);
}

describe("dvault track add", () => {
  it("takes a gallery URL, ~name and the old name.deviantart.com form, stores the service's user; refuses a user the service does not know, or the account's own, adding nothing", async () => {
    const [one, two, three] = artists();
    const owner = h.sim.truth.users.get(h.sim.truth.ownerId)!;
    const [own, nobody, run] = await Promise.all([
      // The account's own user: its own sources archive their gallery already (tracked, it was synced twice).
      runDvault(h, ["track", "add", `https://www.deviantart.com/${owner.username.toLowerCase()}`]),
      runDvault(h, ["track", "add", `~${one!.username}`, "https://www.deviantart.com/nobody-by-that-name"]),
      runDvault(h, [
        "track",
        "add",
        `https://www.deviantart.com/${one!.username.toLowerCase()}/gallery/all`,
        `~${two!.username}`,
        `https://${three!.username.toLowerCase()}.deviantart.com/favourites/`,
      ]),
    ]);
    expect(own.code).toBe(1);
    expect(own.stderr).toBe(
      `dvault: ${owner.username} is account "${h.account.name}" itself: its gallery, favourites and journals are already archived by its own sources; nothing was added\n`,
    );
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toBe('dvault: the service has no user "nobody-by-that-name": nothing was added (check the spelling)\n');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe([one!, two!, three!].map((u) => `tracking ${u.username} with the token of ${h.account.name}\n`).join(""));
    expect(await tracked()).toEqual(byName([one!, two!, three!].map((u) => ({ username: u.username, userid: u.userid }))));
  }, 90_000);

  it("tracks the artist of a work's page, and says that one work alone is dvault add", async () => {
    const [one] = artists();
    const d = [...h.sim.truth.deviations.values()].find((x) => x.authorId === one!.userid && !x.isDeleted)!;
    const url = `https://www.deviantart.com/${one!.username}/art/${d.slug}-${d.numericId}`;
    const run = await runDvault(h, ["track", "add", url]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(
      `tracking ${one!.username} with the token of ${h.account.name}\n${url} is a work's page: its artist is tracked (every work of theirs); to archive only that work: dvault add <URL>\n`,
    );
  }, 90_000);
});

describe("dvault add", () => {
  it("archives one work from its URL: its row in the mirror and its file, byte for byte", async () => {
    const t = h.sim.truth;
    const [artist] = artists();
    const d = [...t.deviations.values()].find((x) => x.authorId === artist!.userid && x.isDownloadable && !x.isDeleted && x.kind !== "journal")!;
    const url = `https://www.deviantart.com/${artist!.username}/art/${d.slug}-${d.numericId}`;
    const run = await runDvault(h, ["add", url]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^added ".*" by ${artist!.username} \\(${d.deviationid}\\): stored \\S+ \\(`));
    const { rows: devs } = await h.pool.query("SELECT deviationid, title, author_userid FROM deviations WHERE deviationid = $1", [d.deviationid]);
    expect(devs).toEqual([{ deviationid: d.deviationid, title: d.title, author_userid: artist!.userid }]);
    const { rows } = await h.pool.query<{ status: string; path: string; sha256: string }>(
      "SELECT status, path, sha256 FROM downloads WHERE deviationid = $1 AND kind = 'original'",
      [d.deviationid],
    );
    expect(rows[0]).toMatchObject({ status: "done", sha256: await h.sim.fileSha256(d.deviationid) });
    const bytes = await fs.readFile(path.join(h.archiveDir, rows[0]!.path));
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(await h.sim.fileSha256(d.deviationid));
    // Only this work was fetched: the gallery's files the sync wanted are still wanted.
    const { rows: others } = await h.pool.query("SELECT status, count(*)::int AS n FROM downloads WHERE deviationid <> $1 GROUP BY status", [d.deviationid]);
    expect(others).toEqual([{ status: "wanted", n: expect.any(Number) }]);
    // Again: nothing new, and its words say so (not "added"), with no second download.
    const seq = h.lastSeq();
    const again = await runDvault(h, ["add", url]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(
      `"${d.title}" by ${artist!.username} (${d.deviationid}) was already archived, nothing new was added: its file is ${rows[0]!.path} (${formatBytes(bytes.length)})\n`,
    );
    expect(h.sim.log().filter((e) => e.seq > seq && e.route.endsWith("/deviation/download/{deviationid}"))).toEqual([]);
  }, 90_000);

  it("says so when the weekly allowance is spent: a free rendition stored, the original waiting for the next window", async () => {
    const t = h.sim.truth;
    const [, artist] = artists();
    const d = [...t.deviations.values()].find((x) => x.authorId === artist!.userid && x.isDownloadable && !x.isDeleted && x.kind === "image")!;
    const set = await runDvault(h, ["account", "set", h.account.name, "--download-quota", "0"]);
    expect(set.code, set.stderr).toBe(0);
    try {
      const run = await runDvault(h, ["add", `https://www.deviantart.com/${artist!.username}/art/${d.slug}-${d.numericId}`]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/: stored a free rendition, \S+ \(.+\); the original waits \(.*allowance.*\) and follows from \d{4}-\d\d-\d\dT/);
      const { rows } = await h.pool.query("SELECT status FROM downloads WHERE deviationid = $1 AND kind = 'original'", [d.deviationid]);
      expect(rows).toEqual([{ status: "degraded" }]);
    } finally {
      await runDvault(h, ["account", "set", h.account.name, "--download-quota", "default"]);
    }
  }, 90_000);
});

describe("dvault api", () => {
  it("gallery.folders --paginate prints every folder the sync read into the mirror", async () => {
    const owner = h.sim.truth.users.get(h.sim.truth.ownerId)!;
    const run = await runDvault(h, ["api", "gallery.folders", "--param", `username=${owner.username}`, "--param", "limit=1", "--paginate"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split("\n")).toHaveLength(1);
    const folders = JSON.parse(run.stdout) as { folderid: string; name: string }[];
    const { rows } = await h.pool.query<{ folderid: string; name: string }>(
      "SELECT folderid, name FROM gallery_folders WHERE owner_userid = $1 AND removed_at IS NULL ORDER BY folderid",
      [owner.userid],
    );
    expect(rows.length).toBeGreaterThan(1);
    expect(folders.map((f) => ({ folderid: f.folderid, name: f.name })).sort((a, b) => a.folderid.localeCompare(b.folderid))).toEqual(rows);
  }, 90_000);

  it("refuses a write whose scope the grant lacks, naming it, before any call; a refusal is one line; --list shows removed operations", async () => {
    // The grant a plain `dvault auth login` asks for (DEFAULT_SCOPES): no write scope beyond them.
    const granted: string[] = [...DEFAULT_SCOPES];
    await storeOwnerGrant(h.services, h.sim, h.sim.issueUserToken({ userId: h.sim.truth.ownerId, scopes: granted }));
    const write = CATALOGUE.find((op) => op.write && !op.removed && op.scopes.some((s) => !granted.includes(s)))!;
    const missing = write.scopes.filter((s) => !granted.includes(s)).join(" ");
    const before = h.sim.log().length;
    const [run, list, nobody] = await Promise.all([
      runDvault(h, ["api", write.id, "--data", "x=1", "--yes"]),
      runDvault(h, ["api", "--list"]),
      runDvault(h, ["api", "user.profile", "--param", "username=nobody-by-that-name"]),
    ]);
    // The service's refusal is one line with its error and error_code.
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toMatch(/^dvault: user\.profile: HTTP 400 invalid_request error_code 2: .+\n$/);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `dvault: ${write.id} needs the scope ${missing}, which account "${h.account.name}" was not granted: log in again asking for it with dvault auth login --account ${h.account.name} --scopes "${missing}"\n`,
    );
    // No request but the profile lookup that ran beside it.
    expect(
      h.sim
        .log()
        .slice(before)
        .filter((e) => !e.route.endsWith("/user/profile/{username}")),
    ).toEqual([]);

    expect(list.code, list.stderr).toBe(0);
    const removed = CATALOGUE.filter((op) => op.removed);
    expect(removed.length).toBeGreaterThan(0);
    for (const op of removed) expect(list.stdout).toMatch(new RegExp(`^${op.id.replaceAll(".", "\\.")}\\s+${op.method}\\s+.*removed`, "m"));
    expect(list.stdout.trim().split("\n")).toHaveLength(CATALOGUE.length + 1);
    await storeOwnerGrant(h.services, h.sim);
  }, 90_000);

  it("asks before a write on a terminal: anything but yes sends nothing", async () => {
    const { rows } = await h.pool.query<{ scopes: string[] }>("SELECT scopes FROM accounts WHERE id = $1", [h.account.id]);
    const write = CATALOGUE.find((op) => op.write && !op.removed && op.method === "POST" && op.scopes.every((s) => rows[0]!.scopes.includes(s)))!;
    const before = h.sim.log().length;
    const run = await runDvaultInTty(h, ["api", write.id, "--data", "x=1"], {}, "n\n");
    expect(run.stdout).toContain(`${write.id} (POST ${write.path}) changes things on the service as ${h.account.name}. Send it? [y/N]`);
    expect(run.stdout).toContain("dvault: nothing was sent");
    expect(run.code).toBe(1);
    expect(h.sim.log().length).toBe(before);
  }, 90_000);
});
