// The simulator's downloads behaviour over real sockets: the weekly quota on the simulated clock and its
// error bodies, expiring signed URLs, the CDN's Range/ETag answers, resets mid-body, the bandwidth cap,
// renditions, hostile names, and a 200 MB file streamed with the right sha256 and flat memory.
import { createHash } from "node:crypto";
import http from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";
import { weekStartMs } from "../../src/simulator/quota.ts";
import { downloadableOwnerDeviations } from "../../src/simulator/dataset.ts";

type Json = Record<string, unknown>;

const LIMIT_REACHED = { error: "invalid_request", error_description: "Free download limit reached.", error_code: 2, status: "error" };
const NOT_DOWNLOADABLE = { error: "invalid_request", error_description: "Deviation not downloadable.", error_code: 2, status: "error" };
const SUBSCRIBERS_ONLY = { error: "invalid_request", error_description: "Only subscribers may have access to this download.", status: "error" };
const MiB = 1024 * 1024;

async function api(sim: Simulator, path: string, token: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(sim.apiUrl + path, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Json };
}

async function control(sim: Simulator, method: string, path: string, body?: unknown): Promise<Json> {
  const res = await fetch(`${sim.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  return (await res.json()) as Json;
}

type RawResponse = { status: number; headers: http.IncomingHttpHeaders; body: Buffer; error?: Error; elapsedMs: number };

/** A GET with node:http, keeping what arrived even when the connection is cut mid-body. */
function get(url: string, headers: Record<string, string> = {}, method = "GET"): Promise<RawResponse> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      const finish = (error?: Error) =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks),
          elapsedMs: performance.now() - started,
          ...(error ? { error } : {}),
        });
      res.on("end", () => finish());
      res.on("error", (e) => finish(e));
      res.on("aborted", () => finish(new Error("aborted")));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Streams a GET into sha256, sampling the RSS; never holds the body. */
function hashUrl(url: string): Promise<{ status: number; sha256: string; size: number; peakRss: number }> {
  return new Promise((resolve, reject) => {
    const hash = createHash("sha256");
    let size = 0;
    let peakRss = process.memoryUsage().rss;
    const timer = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }, 25);
    http
      .get(url, { agent: false }, (res) => {
        res.on("data", (c: Buffer) => {
          size += c.length;
          hash.update(c);
        });
        res.on("end", () => {
          clearInterval(timer);
          resolve({ status: res.statusCode ?? 0, sha256: hash.digest("hex"), size, peakRss: Math.max(peakRss, process.memoryUsage().rss) });
        });
        res.on("error", (e) => {
          clearInterval(timer);
          reject(e);
        });
      })
      .on("error", (e) => {
        clearInterval(timer);
        reject(e);
      });
  });
}

function sha(buf: Buffer): string {
  return createHash("sha256").update(buf).digest("hex");
}

describe("simulator downloads", () => {
  let sim: Simulator;
  let owner: string;
  let token: string;
  let downloadable: string[];

  // A fresh simulator per test: tests spend the download allowance, move the clock and change files.
  beforeEach(async () => {
    sim = await startSimulator({ seed: 21, downloadQuota: 5 });
    owner = sim.truth.ownerId;
    token = sim.issueUserToken().access_token;
    downloadable = downloadableOwnerDeviations(sim.truth).map((d) => d.deviationid);
  });
  afterEach(async () => {
    await sim.close();
  });

  describe("weekly quota", () => {
    it("counts successful /deviation/download calls (not CDN fetches) and answers the real error over it", async () => {
      const week = weekStartMs(sim.clock.now().getTime());
      expect(sim.quotaUsed(owner)).toBe(0);
      const first = await api(sim, `/deviation/download/${downloadable[0]}`, token);
      expect(first.status).toBe(200);
      // Fetching the file, twice, does not count.
      for (let i = 0; i < 2; i++) expect((await get(String(first.body.src))).status).toBe(200);
      expect(sim.quotaUsed(owner)).toBe(1);
      for (const id of downloadable.slice(1, 5)) expect((await api(sim, `/deviation/download/${id}`, token)).status).toBe(200);
      expect(sim.quotaUsed(owner)).toBe(5);
      const over = await api(sim, `/deviation/download/${downloadable[5]}`, token);
      expect(over).toEqual({ status: 400, body: LIMIT_REACHED });
      // Refusals do not count.
      expect(sim.quotaUsed(owner)).toBe(5);
      expect(await control(sim, "GET", `/_sim/quota?userId=${owner}`)).toMatchObject({
        allowance: 5,
        used: 5,
        weekStart: new Date(week).toISOString(),
        resetsAt: new Date(week + 7 * 86_400_000).toISOString(),
      });

      // Another account has its own allowance.
      const other = [...sim.truth.users.values()].find((u) => u.userid !== owner && !u.isDeactivated);
      const otherToken = sim.issueUserToken({ userId: other?.userid ?? "" }).access_token;
      expect((await api(sim, `/deviation/download/${downloadable[5]}`, otherToken)).status).toBe(200);
      expect(sim.quotaUsed(other?.userid ?? "")).toBe(1);

      // Still the same week one millisecond before Monday 00:00 UTC; a new one at it.
      sim.clock.set(new Date(week + 7 * 86_400_000 - 1));
      token = sim.issueUserToken().access_token;
      expect((await api(sim, `/deviation/download/${downloadable[5]}`, token)).body).toEqual(LIMIT_REACHED);
      sim.clock.advance(1);
      expect(sim.quotaUsed(owner)).toBe(0);
      // A week on, the access token has long expired: a fresh one.
      token = sim.issueUserToken().access_token;
      const next = await api(sim, `/deviation/download/${downloadable[5]}`, token);
      expect(next.status).toBe(200);
      expect(sim.quotaUsed(owner)).toBe(1);
    });

    it("takes a new allowance per user or for everyone through POST /_sim/quota", async () => {
      const before = sim.quotaUsed(owner);
      await control(sim, "POST", "/_sim/quota", { userId: owner, allowance: before + 2 });
      for (const id of downloadable.slice(10, 12)) expect((await api(sim, `/deviation/download/${id}`, token)).status).toBe(200);
      expect((await api(sim, `/deviation/download/${downloadable[12]}`, token)).body).toEqual(LIMIT_REACHED);
      // A default for everyone leaves a user's own allowance alone.
      expect(await control(sim, "POST", "/_sim/quota", { allowance: 150 })).toMatchObject({ ok: true, allowance: before + 2 });
      expect((await control(sim, "POST", "/_sim/quota", { allowance: -1 })).error).toBe("bad_request");
      sim.setDownloadQuota({ userId: owner, allowance: 300 });
      expect((await api(sim, `/deviation/download/${downloadable[12]}`, token)).status).toBe(200);
    });

    it("answers not downloadable and subscribers-only before counting", async () => {
      const used = sim.quotaUsed(owner);
      const notDownloadable = [...sim.truth.deviations.values()].find((d) => d.authorId === owner && !d.isDeleted && d.kind === "image" && !d.isDownloadable);
      expect(await api(sim, `/deviation/download/${notDownloadable?.deviationid}`, token)).toEqual({ status: 400, body: NOT_DOWNLOADABLE });
      const journal = [...sim.truth.deviations.values()].find((d) => d.authorId === owner && !d.isDeleted && d.kind === "journal");
      expect((await api(sim, `/deviation/download/${journal?.deviationid}`, token)).body).toEqual(NOT_DOWNLOADABLE);
      // Tier content is locked for anyone but its author.
      const tiered = [...sim.truth.deviations.values()].find((d) => d.tier && !d.isDeleted && d.authorId !== owner);
      expect(tiered).toBeDefined();
      expect(await api(sim, `/deviation/download/${tiered?.deviationid}`, token)).toEqual({ status: 403, body: SUBSCRIBERS_ONLY });
      const shown = await api(sim, `/deviation/${tiered?.deviationid}`, token);
      expect(shown.body.tier_access).toBe("locked");
      expect(sim.quotaUsed(owner)).toBe(used);
    });
  });

  describe("signed URLs", () => {
    it("expire after about ten simulated minutes (403), refuse a tampered token, and a fresh call signs again", async () => {
      const id = downloadable[20] as string;
      const info = await api(sim, `/deviation/download/${id}`, token);
      const src = String(info.body.src);
      const token64 = new URL(src).searchParams.get("token") ?? "";
      const claims = JSON.parse(Buffer.from(token64.split(".")[1] ?? "", "base64url").toString("utf8")) as { iat: number; exp: number };
      expect(claims.exp - claims.iat).toBe(600);
      expect((await get(src)).status).toBe(200);
      const tampered = src.replace(/token=([^.]+)\.([^.]+)\./, (_m, h: string, p: string) => `token=${h}.${p.slice(0, -2)}AA.`);
      expect((await get(tampered)).status).toBe(403);
      expect((await get(src.replace(/\?token=.*$/, ""))).status).toBe(401);

      sim.clock.advance(599_000);
      expect((await get(src)).status).toBe(200);
      sim.clock.advance(1_000);
      const expired = await get(src);
      expect(expired.status).toBe(403);
      expect(expired.body.toString()).toContain("Token expired");
      const again = await api(sim, `/deviation/download/${id}`, token);
      expect((await get(String(again.body.src))).body.equals(await sim.fileBytes(id))).toBe(true);
    });
  });

  describe("CDN", () => {
    it("serves Content-Length, a strong ETag, Accept-Ranges and a content disposition; HEAD has no body", async () => {
      const id = downloadable[21] as string;
      const src = String((await api(sim, `/deviation/download/${id}`, token)).body.src);
      const full = await get(src);
      expect(full.status).toBe(200);
      expect(Number(full.headers["content-length"])).toBe(sim.fileSize(id));
      expect(full.headers["accept-ranges"]).toBe("bytes");
      expect(full.headers.etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);
      expect(full.headers["content-disposition"]).toMatch(/^attachment; filename=/);
      expect(sha(full.body)).toBe(await sim.fileSha256(id));
      const head = await get(src, {}, "HEAD");
      expect(head.status).toBe(200);
      expect(head.headers["content-length"]).toBe(full.headers["content-length"]);
      expect(head.body.length).toBe(0);
      expect(await control(sim, "GET", `/_sim/file?deviationid=${id}`)).toEqual({ deviationid: id, size: full.body.length, sha256: sha(full.body) });
    });

    it("answers Range requests with 206 and honours If-Range", async () => {
      const id = downloadable[22] as string;
      const src = String((await api(sim, `/deviation/download/${id}`, token)).body.src);
      const bytes = await sim.fileBytes(id);
      const size = bytes.length;
      const etag = String((await get(src, {}, "HEAD")).headers.etag);

      const mid = await get(src, { range: "bytes=100-1099" });
      expect(mid.status).toBe(206);
      expect(mid.headers["content-range"]).toBe(`bytes 100-1099/${size}`);
      expect(mid.headers["content-length"]).toBe("1000");
      expect(mid.body.equals(bytes.subarray(100, 1100))).toBe(true);

      // Odd offsets inside a cipher block, an open end and a suffix.
      const tail = await get(src, { range: `bytes=${size - 777}-`, "if-range": etag });
      expect(tail.status).toBe(206);
      expect(tail.body.equals(bytes.subarray(size - 777))).toBe(true);
      const suffix = await get(src, { range: "bytes=-5" });
      expect(suffix.body.equals(bytes.subarray(size - 5))).toBe(true);
      const head = await get(src, { range: "bytes=0-3" });
      expect(head.body.equals(bytes.subarray(0, 4))).toBe(true);

      // A stale validator gets the whole (current) file.
      const stale = await get(src, { range: "bytes=100-", "if-range": '"stale-etag"' });
      expect(stale.status).toBe(200);
      expect(stale.body.equals(bytes)).toBe(true);
      const beyond = await get(src, { range: `bytes=${size}-` });
      expect(beyond.status).toBe(416);
      expect(beyond.headers["content-range"]).toBe(`bytes */${size}`);

      // Ranges can be switched off: then the whole file, always.
      await control(sim, "POST", "/_sim/cdn", { ranges: false });
      const whole = await get(src, { range: "bytes=100-199" });
      expect(whole.status).toBe(200);
      expect(whole.headers["accept-ranges"]).toBe("none");
      expect(whole.body.length).toBe(size);
      await control(sim, "POST", "/_sim/cdn", { ranges: true });
    });

    it("changes the bytes and the ETag when the deviation changes", async () => {
      const id = downloadable[23] as string;
      const before = await get(String((await api(sim, `/deviation/download/${id}`, token)).body.src), {}, "HEAD");
      const sha1 = await sim.fileSha256(id);
      const edit = await fetch(`${sim.apiUrl}/deviation/edit/${id}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: new URLSearchParams({ title: "Edited" }),
      });
      expect(edit.status).toBe(200);
      const after = await get(String((await api(sim, `/deviation/download/${id}`, token)).body.src), {}, "HEAD");
      expect(after.headers.etag).not.toBe(before.headers.etag);
      expect(await sim.fileSha256(id)).not.toBe(sha1);
    });

    it("resets mid-body at the byte asked for, and a Range resume completes the file", async () => {
      const id = downloadable[24] as string;
      const src = String((await api(sim, `/deviation/download/${id}`, token)).body.src);
      sim.faults.add({ route: "/_cdn", kind: "reset_mid_body", atByte: 10_000 });
      const cut = await get(src);
      expect(cut.status).toBe(200);
      expect(cut.error).toBeDefined();
      expect(cut.body.length).toBe(10_000);
      const entry = sim
        .log()
        .filter((e) => e.path.startsWith("/_cdn/"))
        .at(-1);
      expect(entry?.fault).toBe("reset_mid_body");

      const rest = await get(src, { range: `bytes=${cut.body.length}-`, "if-range": String(cut.headers.etag) });
      expect(rest.status).toBe(206);
      expect(sha(Buffer.concat([cut.body, rest.body]))).toBe(await sim.fileSha256(id));

      // Without atByte: half of that response's body (here a 206 from byte 1000).
      sim.faults.add({ route: "/_cdn", kind: "reset_mid_body" });
      const half = await get(src, { range: "bytes=1000-" });
      expect(half.status).toBe(206);
      expect(half.body.length).toBe(Math.floor((sim.fileSize(id) - 1000) / 2));
    });

    it("caps each connection's bandwidth, changeable mid-run", async () => {
      const id = downloadable[25] as string;
      const src = String((await api(sim, `/deviation/download/${id}`, token)).body.src);
      const size = sim.fileSize(id);
      expect(await control(sim, "POST", "/_sim/cdn", { bytesPerSecond: size * 2 })).toMatchObject({ bytesPerSecond: size * 2 });
      const capped = await get(src);
      expect(capped.body.length).toBe(size);
      // Half a second at the cap: never faster; slower only by scheduling slack.
      expect(capped.elapsedMs).toBeGreaterThan(450);
      expect(capped.elapsedMs).toBeLessThan(2500);
      // Two connections in parallel each get the cap (it is per connection): not twice as long.
      const [a, b] = await Promise.all([get(src), get(src)]);
      expect(Math.max(a.elapsedMs, b.elapsedMs)).toBeLessThan(capped.elapsedMs * 1.6 + 200);

      // A change applies to a transfer already running.
      await control(sim, "POST", "/_sim/cdn", { bytesPerSecond: size / 4 });
      const slow = get(src);
      await new Promise((r) => setTimeout(r, 300));
      sim.setCdn({ bytesPerSecond: size * 100 });
      expect((await slow).elapsedMs).toBeLessThan(2000);
      await control(sim, "POST", "/_sim/cdn", { bytesPerSecond: null });
      const free = await get(src);
      expect(free.elapsedMs).toBeLessThan(capped.elapsedMs / 2);
    });

    it("points renditions at the CDN: distinct bytes each, smaller than the original, blurred ones marked", async () => {
      const id = downloadable[26] as string;
      const dev = (await api(sim, `/deviation/${id}`, token)).body as {
        content: { src: string; filesize: number };
        preview: { src: string };
        thumbs: Array<{ src: string }>;
      };
      const renditions = [dev.content.src, dev.preview.src, ...dev.thumbs.map((t) => t.src)];
      const bodies = await Promise.all(renditions.map(async (u) => (await get(u)).body));
      expect(bodies[0]?.length).toBe(dev.content.filesize);
      for (const b of bodies) expect(b.length).toBeLessThan(sim.fileSize(id));
      expect(new Set(bodies.map(sha)).size).toBe(renditions.length);
      for (const u of renditions) expect(new URL(u).pathname).toMatch(/^\/_cdn\/(fullview|preview|thumb)\//);

      const strict = [...sim.truth.deviations.values()].find(
        (d) => d.authorId === owner && !d.isDeleted && d.isMature && d.matureLevel === "strict" && d.kind === "image",
      );
      const blurred = (await api(sim, `/deviation/${strict?.deviationid}?mature_content=true`, token)).body as {
        content: { src: string };
        thumbs: Array<{ src: string }>;
      };
      expect(blurred.content.src).toMatch(/,blur_\d+\//);
      expect(blurred.thumbs[0]?.src).toMatch(/,blur_\d+\//);
      expect((await get(blurred.content.src)).status).toBe(200);

      // Multi-image posts say so (the API gives the first image only).
      const multi = [...sim.truth.deviations.values()].find((d) => d.authorId === owner && !d.isDeleted && d.isMultiMedia && !d.isMature);
      expect((await api(sim, `/deviation/${multi?.deviationid}`, token)).body.is_multi_media).toBe(true);
      expect((await api(sim, `/deviation/${id}`, token)).body.is_multi_media).toBeUndefined();

      const video = [...sim.truth.deviations.values()].find((d) => d.authorId === owner && !d.isDeleted && d.kind === "video" && !d.isMature);
      const v = (await api(sim, `/deviation/${video?.deviationid}`, token)).body as { videos: Array<{ src: string; quality: string; filesize: number }> };
      expect(v.videos.map((x) => x.quality)).toEqual(["360p", "720p"]);
      for (const x of v.videos) {
        const res = await get(x.src);
        expect(res.headers["content-type"]).toBe("video/mp4");
        expect(res.body.length).toBe(x.filesize);
      }
    });
  });
});

describe("simulator downloads: dataset options", () => {
  it("serves hostile titles and filenames when asked, and nowhere else", async () => {
    const plain = await startSimulator({ seed: 5 });
    const hostile = await startSimulator({ seed: 5, dataset: { hostileNames: true }, downloadQuota: 1000 });
    try {
      const titles = [...hostile.truth.deviations.values()].map((d) => d.title);
      for (const t of ["../../etc/passwd", "CON", "nul.txt", "Evil \u202Egnp.exe", "Sunset", "SUNSET", "Caf\u00e9", "Cafe\u0301"]) expect(titles).toContain(t);
      expect(titles.some((t) => t.length === 300)).toBe(true);
      expect(titles.some((t) => t.includes("\u0000"))).toBe(true);
      expect([...plain.truth.deviations.values()].some((d) => d.title === "../../etc/passwd")).toBe(false);
      // Nothing else moved: the same ids in the same order.
      expect([...hostile.truth.deviations.keys()]).toEqual([...plain.truth.deviations.keys()]);

      const token = hostile.issueUserToken().access_token;
      const traversal = [...hostile.truth.deviations.values()].find((d) => d.title === "../../etc/passwd");
      const info = await api(hostile, `/deviation/download/${traversal?.deviationid}`, token);
      expect(info.body.filename).toBe("../../etc/passwd");
      const res = await get(String(info.body.src));
      expect(res.status).toBe(200);
      expect(res.headers["content-disposition"]).toContain("filename*=UTF-8''..%2F..%2Fetc%2Fpasswd");
      for (const segment of new URL(String(info.body.src)).pathname.split("/")) expect([".", ".."]).not.toContain(segment);
      const shown = await api(hostile, `/deviation/${traversal?.deviationid}`, token);
      expect(shown.body.title).toBe("../../etc/passwd");
    } finally {
      await Promise.all([plain.close(), hostile.close()]);
    }
  });

  it("streams a 200 MB original with the right sha256 and flat memory", { timeout: 120_000 }, async () => {
    const bytes = 200 * MiB;
    const sim = await startSimulator({ seed: 9, dataset: { deviations: 40, largeFiles: [{ index: 0, bytes }] } });
    try {
      const id = downloadableOwnerDeviations(sim.truth)[0]?.deviationid ?? "";
      expect(sim.fileSize(id)).toBe(bytes);
      const token = sim.issueUserToken().access_token;
      const info = await api(sim, `/deviation/download/${id}`, token);
      expect(info.body.filesize).toBe(bytes);
      const expected = await sim.fileSha256(id);
      global.gc?.();
      const before = process.memoryUsage().rss;
      const got = await hashUrl(String(info.body.src));
      expect(got).toMatchObject({ status: 200, size: bytes, sha256: expected });
      // Server and client share this process: a buffered file would show up as ≥ 200 MB here.
      expect(got.peakRss - before).toBeLessThan(64 * MiB);
      // The checksum is cached.
      const t0 = performance.now();
      expect(await sim.fileSha256(id)).toBe(expected);
      expect(performance.now() - t0).toBeLessThan(50);
    } finally {
      await sim.close();
    }
  });

  it("takes per-deviation sizes from fileSizes", async () => {
    const probe = await startSimulator({ seed: 9, dataset: { deviations: 20 } });
    const id = downloadableOwnerDeviations(probe.truth)[1]?.deviationid ?? "";
    await probe.close();
    const sim = await startSimulator({ seed: 9, dataset: { deviations: 20 }, fileSizes: { [id]: 3 * MiB + 5 } });
    try {
      expect(sim.fileSize(id)).toBe(3 * MiB + 5);
      const info = await api(sim, `/deviation/download/${id}`, sim.issueUserToken().access_token);
      const res = await get(String(info.body.src));
      expect(res.body.length).toBe(3 * MiB + 5);
      expect(sha(res.body)).toBe(await sim.fileSha256(id));
    } finally {
      await sim.close();
    }
  });
});
