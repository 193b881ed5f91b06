// The real gallery-dl (Debian's 1.25 package) against the simulator, then `dvault import gallery-dl` of what it
// wrote. gallery-dl only calls https://www.deviantart.com: it reaches the simulator through a CONNECT proxy
// that tunnels that name to the simulator's TLS listener, whose certificate a throwaway CA signed
// (test/helpers/service-name-tunnel.ts). Skipped, saying so, when gallery-dl is not installed.
import { execFile, spawnSync } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importGalleryDl } from "../../src/import/gallery-dl/import-folder.ts";
import { UNMATCHED, type ImportReport } from "../../src/import/gallery-dl/types.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { galleryDlOptions, SERVICE_HOST, startServiceNameTunnel, type ServiceNameTunnel } from "../helpers/service-name-tunnel.ts";
import { SIM_CLIENT_ID, SIM_CLIENT_SECRET } from "../helpers/sync-harness.ts";

const version = spawnSync("gallery-dl", ["--version"], { encoding: "utf8" });
const installed = version.status === 0;
if (!installed) console.log("import-gallery-dl-real: skipped: gallery-dl is not installed (Debian: apt-get install gallery-dl)");

/** Originals gallery-dl may fetch before the simulator refuses more (it then saves the fullview). */
const QUOTA = 3;

describe.skipIf(!installed)(`gallery-dl ${version.stdout?.trim() ?? ""} then ${importGalleryDl.name}`, () => {
  let h: DownloadHarness;
  let tmp: string;
  let tunnel: ServiceNameTunnel;
  let base: string;
  let archiveFile: string;
  let gdl: { code: number | null; stderr: string };
  let fetchedByGalleryDl: string[];

  beforeAll(async () => {
    h = await createDownloadHarness({
      // Debian's 1.25 reads `category` from every deviation, which the service dropped in August 2024
      // (docs/service-behaviour.md#deviation-category-removed): the simulator as the service was before then.
      sim: {
        mode: "legacy",
        dataset: {
          deviations: 12,
          galleryFolders: 2,
          collectionFolders: 1,
          favourites: 2,
          trackedUsers: 0,
          notes: 1,
          messages: 1,
          feedItems: 1,
          watchers: 1,
          friends: 1,
          statuses: 1,
        },
        downloadQuota: QUOTA,
      },
      sources: [gallerySource],
    });
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-real-gdl-"));
    tunnel = await startServiceNameTunnel(h.sim, tmp);
    base = path.join(tmp, "downloads");
    archiveFile = path.join(tmp, "gallery-dl-archive.sqlite3");
    const owner = h.sim.truth.users.get(h.sim.truth.ownerId)?.username ?? "";
    // gallery-dl's own grant, minted by the simulator (it refreshes it, and keeps the rotated token in its cache file).
    const grant = h.sim.issueUserToken({ userId: h.sim.truth.ownerId });
    const seq = h.lastSeq();
    gdl = await new Promise((resolve) => {
      execFile(
        "gallery-dl",
        [
          ...galleryDlOptions({
            proxyUrl: tunnel.proxyUrl,
            caFile: tunnel.caFile,
            cacheFile: path.join(tmp, "gallery-dl-cache.sqlite3"),
            clientId: SIM_CLIENT_ID,
            clientSecret: SIM_CLIENT_SECRET,
            refreshToken: grant.refresh_token,
          }),
          "--write-metadata",
          "--download-archive",
          archiveFile,
          "-d",
          base,
          `https://${SERVICE_HOST}/${owner}/gallery`,
        ],
        { env: { PATH: process.env.PATH ?? "", HOME: tmp, LANG: "C.UTF-8" }, timeout: 60_000 },
        (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      );
    });
    fetchedByGalleryDl = h.sim
      .log()
      .filter((e) => e.seq > seq && e.route.includes("/deviation/download/") && e.status === 200)
      .map((e) => (e.path.split("/").pop() ?? "").toUpperCase());
  }, 120_000);

  afterAll(async () => {
    await tunnel?.close();
    await h?.close();
    if (tmp) await fs.rm(tmp, { recursive: true, force: true });
  });

  it("gallery-dl reached the simulator under the service's name only, and spent the allowance", () => {
    expect(tunnel.connects.length, gdl.stderr).toBeGreaterThan(0);
    expect(new Set(tunnel.connects)).toEqual(new Set([`${SERVICE_HOST}:443`]));
    expect(fetchedByGalleryDl.length, gdl.stderr).toBe(QUOTA);
  });

  // The download after the import is what shows the import counted, so import and download are one test.
  it("imports its folder: every original it fetched, byte for byte, and no /deviation/download; then download --once spends nothing on them", async () => {
    // Step 1: the import.
    const seq = h.lastSeq();
    const report: ImportReport = await importGalleryDl({ services: h.services, dir: base, archiveFile, link: false, log: h.log, archive: h.deps.archive });
    expect(h.sim.log().filter((e) => e.seq > seq && e.route.includes("/deviation/download/"))).toEqual([]);
    expect(report.originals).toBe(QUOTA);
    expect(report.quotaSaved).toBe(QUOTA);
    const { rows } = await h.pool.query<{ deviationid: string; path: string }>(
      "SELECT deviationid, path FROM downloads WHERE kind = 'original' AND status = 'done' AND source = 'imported'",
    );
    expect(rows.map((r) => r.deviationid).sort()).toEqual([...fetchedByGalleryDl].sort());
    for (const r of rows) expect((await fs.readFile(h.deps.archive.resolveInside(r.path))).equals(await h.sim.fileBytes(r.deviationid))).toBe(true);
    // Over its allowance gallery-dl saved fullviews: each one a stand-in that keeps the original wanted.
    expect(report.renditions).toBeGreaterThan(0);
    const unexpected = report.unmatched.filter((u) => u.reason !== UNMATCHED.textPage);
    expect(unexpected).toEqual([]);

    // Step 2: nothing is left for download --once to spend on what gallery-dl already had.
    await h.syncAll(["gallery"]);
    const afterImport = h.lastSeq();
    h.sim.setDownloadQuota({ allowance: 1000 });
    await h.runOnce();
    const fetched = h.sim
      .log()
      .filter((e) => e.seq > afterImport && e.route.includes("/deviation/download/"))
      .map((e) => (e.path.split("/").pop() ?? "").toUpperCase());
    for (const id of fetchedByGalleryDl) expect(fetched).not.toContain(id);
  }, 120_000);
});
